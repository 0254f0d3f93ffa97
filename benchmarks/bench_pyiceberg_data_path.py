"""Benchmark: PyIceberg's data path with the package's FileIOs against stock PyIceberg, on the embedded
lakehouse, with a table of over 1 GB. Prints throughput ratios (stock time / ours: 1.00 = as fast)
and the peak local disk of an append, for each FileIO (PyArrow, fsspec), vended and signing; the
time the signer adds to one request; and the PyArrow signing designs side by side.

- **vended**: the table's `RefreshingFileIO` against the same FileIO class built once with the same
  vended keys (what plain PyIceberg does; rebuilt each round with the current keys, so it never
  meets an expiry).
- **signing**: the signing FileIO (every S3 request signed by the lakehouse's signer, in front of
  the same SeaweedFS) against the same FileIO class with the lakehouse's static keys (a job with
  keys of its own: stock PyIceberg cannot sign at all).
- **scan**: `table.scan().to_arrow()` of the whole table; **append**: `table.append()` of
  `--append-mb` MB of random doubles into a scratch table; peak local disk: temporary files open
  during the append (sampled every 5 ms), ours and stock.
- **signer per request**: sequential requests through the signing filesystem and through the same
  s3fs with static keys: a HEAD and an 8 MiB ranged GET; the difference is the signer's share.
- **PyArrow signing designs** (docs/signing.md): the chosen one (reads through a PyArrow filesystem
  backed by the signing s3fs, writes through the signed resumable upload) against a prototype of the other (PyArrow's own S3 client talking to a local proxy
  that re-signs each request at the signer) and PyArrow's own client with static keys, the ceiling
  of any design keeping that client.

Rounds alternate ours and stock in one run (a 2-core machine shared with other work is noisy);
medians. Not a timed test.

    .venv/bin/python benchmarks/bench_pyiceberg_data_path.py [--rounds 3] [--gb 1.1] [--append-mb 256]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from _common import ROOT  # noqa: F401  (puts the repo on sys.path)

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import SpoolDiskPeak

FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}
SECRET = "bench-signer-client-" + "x" * 16
NS = "bench"


def fileio_class(name: str) -> type:
    import importlib

    module, _, cls = FILEIOS[name].rpartition(".")
    return getattr(importlib.import_module(module), cls)


def random_table(mb: float) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = int(mb * 1e6 / 8 / 8)
    return pa.table({f"c{i}": pc.random(n) for i in range(8)})


def make_big_table(cat: Any, gb: float) -> Any:
    """bench.big: `gb` GB of random doubles (they do not compress), in files of ~128 MB."""
    if cat.table_exists(f"{NS}.big"):
        table = cat.load_table(f"{NS}.big")
        if sum(t.file.file_size_in_bytes for t in table.scan().plan_files()) >= gb * 1e9 * 0.95:
            return table
        cat.drop_table(f"{NS}.big")
    data = random_table(gb * 1000 / 4)
    table = cat.create_table(f"{NS}.big", data.schema, properties={"write.target-file-size-bytes": str(128 << 20)})
    for _ in range(4):
        table.append(data)
    return table


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def median(values: list[float]) -> float:
    return statistics.median(values)


# --------------------------------------------------------------------- a re-signing proxy (prototype)
class ResigningProxy:
    """PROTOTYPE, for this measurement only: a loopback HTTP proxy in front of S3 for PyArrow's own S3
    client (static dummy keys, endpoint_override at the proxy), re-signing every request at the
    table's signer. PyArrow's client (AWS SDK for C++ 1.11) sends parts `aws-chunked` with a
    trailing CRC64 checksum, which a signer signing UNSIGNED-PAYLOAD cannot cover: the proxy decodes
    them. A real one would also have to authenticate its client (any local process could use it to
    get requests signed) and stream bodies; this one buffers each (PyArrow's parts are small) and
    checks nothing, so it is an upper bound of that design's speed."""

    def __init__(self, s3_endpoint: str, signer: Any) -> None:
        import requests

        self.s3 = s3_endpoint.rstrip("/")
        self.signer = signer
        self.http = requests.Session()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _chunks(self, stream: Any) -> bytes:
                """The data of a chunked body (HTTP's, or aws-chunked inside it); trailers dropped."""
                out = bytearray()
                while True:
                    size = int(stream.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while stream.readline().strip():
                            pass
                        return bytes(out)
                    out += stream.read(size)
                    stream.readline()

            def _do(self) -> None:
                import io

                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = self._chunks(self.rfile)
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else b""
                if "aws-chunked" in (self.headers.get("Content-Encoding") or "").lower():
                    body = self._chunks(io.BytesIO(body))
                url = proxy.s3 + self.path
                dropped = ("x-amz-date", "x-amz-content-sha256", "x-amz-decoded-content-length", "x-amz-trailer")
                keep = {k: v for k, v in self.headers.items()
                        if k.lower() in ("range", "content-type", "content-md5")
                        or (k.lower().startswith("x-amz-") and k.lower() not in dropped)}
                delete = self.command == "POST" and "delete" in self.path.split("?", 1)[-1].split("&")
                signed_url, headers = proxy.signer.sign(self.command, url, keep, "us-east-1", body if delete else None)
                resp = proxy.http.request(self.command, signed_url, headers=headers, data=body or None,
                                          allow_redirects=False, stream=True)
                content = resp.raw.read(decode_content=False) if self.command != "HEAD" else b""
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", resp.headers.get("Content-Length", str(len(content)))
                                 if self.command == "HEAD" else str(len(content)))
                self.end_headers()
                if content:
                    self.wfile.write(content)

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def native_pyarrow_io(properties: dict, endpoint: str, keys: tuple[str, str]) -> Any:
    """A PyArrowFileIO whose S3 filesystem is PyArrow's own client at `endpoint` with static keys."""
    from pyarrow.fs import S3FileSystem
    from pyiceberg.io.pyarrow import PyArrowFileIO

    class Native(PyArrowFileIO):
        def _initialize_fs(self, scheme: str, netloc: str | None = None) -> Any:
            return S3FileSystem(endpoint_override=endpoint, scheme="http", access_key=keys[0], secret_key=keys[1],
                                region="us-east-1")

    return Native(properties)


# ------------------------------------------------------------------------------------------ the runs
IoMaker = Callable[[Any], Any]  # the table's FileIO as loaded -> the FileIO a side uses


def compare(label: str, big: Any, scratch: dict[str, Any], ours: IoMaker, stock: IoMaker, rounds: int,
            append: Any) -> dict[str, Any]:
    """Alternating rounds: a scan of `big` and an append to the side's scratch table, with each side's
    FileIO (made anew each round from the table's FileIO as loaded)."""
    loaded = {id(t): t.io for t in (big, *scratch.values())}
    rows = big.scan().to_arrow().num_rows
    times: dict[str, list[float]] = {f"{op} {side}": [] for op in ("scan", "append", "scan cpu", "append cpu")
                                     for side in ("ours", "stock")}
    disk = {"ours": 0, "stock": 0}
    for r in range(rounds):
        for side in (("ours", "stock") if r % 2 == 0 else ("stock", "ours")):
            make = ours if side == "ours" else stock
            big.io = make(loaded[id(big)])
            cpu = time.process_time()
            times[f"scan {side}"].append(_scan(big, rows))
            times[f"scan cpu {side}"].append(time.process_time() - cpu)
            target = scratch[side]
            target.io = make(loaded[id(target)])
            cpu = time.process_time()
            with SpoolDiskPeak() as peak:
                times[f"append {side}"].append(timed(lambda t=target: t.append(append)))
            times[f"append cpu {side}"].append(time.process_time() - cpu)
            disk[side] = max(disk[side], peak.peak)
            print(f"  {label} round {r + 1} {side}: scan {times[f'scan {side}'][-1]:.1f} s, append "
                  f"{times[f'append {side}'][-1]:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    big.io = loaded[id(big)]
    out: dict[str, Any] = {k: median(v) for k, v in times.items()}
    out.update({"disk ours": disk["ours"], "disk stock": disk["stock"], "label": label})
    return out


def _scan(table: Any, rows: int) -> float:
    started = time.perf_counter()
    assert table.scan().to_arrow().num_rows == rows
    return time.perf_counter() - started


def _scratch(cat: Any, name: str, append: Any) -> dict[str, Any]:
    out = {}
    for side in ("ours", "stock"):
        full = f"{NS}.{name}_{side}"
        if cat.table_exists(full):
            cat.drop_table(full)
        out[side] = cat.create_table(full, append.schema, properties={"write.target-file-size-bytes": str(128 << 20)})
    return out


def signing_catalog(lake: Any, signer: Any, io: str) -> Any:
    return pyiceberg_catalog(lake, uri=signer.url, credential=f"{CLIENT_ID}:{SECRET}", delegation="remote-signing",
                             **{"oauth2-server-uri": f"{signer.url}/v1/oauth/tokens", "py-io-impl": FILEIOS[io]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gb", type=float, default=1.1, help="size of the scanned table (GB, at least 1)")
    parser.add_argument("--append-mb", type=float, default=256, help="size of each append (MB)")
    parser.add_argument("--data-dir", default=None, help="keep the lakehouse here (reuses the big table)")
    parser.add_argument("--only", choices=("vended", "signing", "per-request", "designs"), action="append")
    args = parser.parse_args()
    parts = set(args.only or ("vended", "signing", "per-request", "designs"))
    with start_lakehouse(data_dir=args.data_dir) as lake:
        info = lake.info
        setup = pyiceberg_catalog(lake, refresh=False)
        setup.create_namespace_if_not_exists(NS)
        started = time.monotonic()
        big = make_big_table(setup, args.gb)
        files = list(big.scan().plan_files())
        size = sum(t.file.file_size_in_bytes for t in files)
        append = random_table(args.append_mb)
        print(f"table {NS}.big: {size / 1e9:.2f} GB in {len(files)} files ({time.monotonic() - started:.0f} s to make); "
              f"append: {append.nbytes / 1e6:.0f} MB; rounds: {args.rounds}; load {os.getloadavg()[0]:.1f}", flush=True)
        signer = SigningCatalogProxy(f"http://127.0.0.1:{info.ports['iceberg']}", info.s3_endpoint, info.access_key,
                                     info.secret_key, clients={CLIENT_ID: SECRET}).start()
        static = {"s3.endpoint": info.s3_endpoint, "s3.access-key-id": info.access_key,
                  "s3.secret-access-key": info.secret_key, "s3.region": "us-east-1", "s3.path-style-access": "true"}
        results: list[dict[str, Any]] = []
        cold: list[dict[str, Any]] = []
        try:
            for io in FILEIOS:
                cls = fileio_class(io)
                if "vended" in parts:
                    cat = pyiceberg_catalog(lake, **{"py-io-impl": FILEIOS[io]})
                    # stock: the same class with the same (current) vended keys of the table
                    results.append(compare(f"{io:7} vended", cat.load_table(f"{NS}.big"),
                                           _scratch(cat, f"append_vended_{io}", append), lambda loaded: loaded,
                                           lambda loaded, c=cls: c(dict(loaded.properties)), args.rounds, append))
                    cat.close()
                if "signing" in parts:
                    cat = signing_catalog(lake, signer, io)
                    table = cat.load_table(f"{NS}.big")
                    before = (table.io.signer.requests, table.io.signer.seconds)
                    results.append(compare(f"{io:7} signing", table, _scratch(cat, f"append_signing_{io}", append),
                                           lambda loaded: loaded, lambda loaded, c=cls: c(dict(static)), args.rounds, append))
                    n, s = table.io.signer.requests - before[0], table.io.signer.seconds - before[1]
                    print(f"  {io} signing: the scans sent {n} requests, each signed in {1000 * s / max(1, n):.1f} ms on average "
                          f"({table.io.signer.reused} requests sent with a kept signature)", flush=True)
                    cat.close()
                    cold.append(cold_scans(lake, signer, io, cls, static, args.rounds))
            print()
            print(f"{'FileIO  mode':16} {'scan ours':>10} {'stock':>8} {'ratio':>6}   {'append ours':>12} {'stock':>8} {'ratio':>6}"
                  f"   {'peak local disk of an append: ours':>36} {'stock':>10}")
            for r in results:
                print(f"{r['label']:16} {r['scan ours']:9.2f}s {r['scan stock']:7.2f}s {r['scan stock'] / r['scan ours']:6.3f}"
                      f"   {r['append ours']:11.2f}s {r['append stock']:7.2f}s {r['append stock'] / r['append ours']:6.3f}"
                      f"   {r['disk ours']:>34,} B {r['disk stock']:>8,} B", flush=True)
            print("ratio = stock time / ours: throughput relative to stock PyIceberg (1.00 = as fast)")
            for c in cold:
                print(f"{c['label']:16} cold-cache scan {c['ours']:.2f}s, static keys {c['stock']:.2f}s, ratio "
                      f"{c['stock'] / c['ours']:.3f}; sign requests per scan {c['signs']:.0f}: {c['per data file']:.2f} per data "
                      f"file ({c['data files']}), {c['per object']:.2f} per object read ({c['objects']})")
            print()
            print(f"{'client CPU (s)':16} {'scan ours':>10} {'stock':>8}   {'append ours':>12} {'stock':>8}   (this process, medians)")
            for r in results:
                print(f"{r['label']:16} {r['scan cpu ours']:9.2f}s {r['scan cpu stock']:7.2f}s   "
                      f"{r['append cpu ours']:11.2f}s {r['append cpu stock']:7.2f}s")
            if "per-request" in parts:
                per_request(lake, signer, static, args.rounds)
            if "designs" in parts:
                designs(lake, signer, static, args.rounds, append)
        finally:
            signer.stop()
            print(f"load at the end: {os.getloadavg()}")


def cold_scans(lake: Any, signer: Any, io: str, cls: type, static: dict, rounds: int) -> dict[str, Any]:
    """Scans on a cold signature cache (a new catalog each round, so none of its signatures is kept)
    alternating with scans with static keys: medians, and the sign requests of one cold scan (its
    planning included) per data file and per object read (data files, manifests, the manifest list)."""
    times: dict[str, list[float]] = {"ours": [], "stock": []}
    signs: list[float] = []
    setup = signing_catalog(lake, signer, io)
    table = setup.load_table(f"{NS}.big")
    rows = table.scan().to_arrow().num_rows
    data = len(list(table.scan().plan_files()))
    snapshot = table.current_snapshot()
    objects = data + 1 + (len(snapshot.manifests(table.io)) if snapshot else 0)
    setup.close()
    for r in range(rounds):
        for side in (("ours", "stock") if r % 2 == 0 else ("stock", "ours")):
            cat = signing_catalog(lake, signer, io)
            table = cat.load_table(f"{NS}.big")
            if side == "stock":
                table.io = cls(dict(static))
            times[side].append(_scan(table, rows))
            if side == "ours":
                signs.append(table.io.signer.requests)
            cat.close()
    return {"label": f"{io:7} signing", "ours": median(times["ours"]), "stock": median(times["stock"]),
            "signs": median(signs), "per data file": median(signs) / max(1, data), "data files": data,
            "per object": median(signs) / max(1, objects), "objects": objects}


def per_request(lake: Any, signer: Any, static: dict, rounds: int) -> None:
    """The signer's share of one request: the same requests, one at a time, through the signing
    s3fs and through s3fs with static keys."""
    from s3fs import S3FileSystem

    cat = signing_catalog(lake, signer, "fsspec")
    table = cat.load_table(f"{NS}.big")
    path = next(iter(table.scan().plan_files())).file.file_path.split("://", 1)[1]
    bucket, key = path.split("/", 1)
    signing_fs = table.io.get_fs("s3")
    plain = S3FileSystem(key=static["s3.access-key-id"], secret=static["s3.secret-access-key"], skip_instance_cache=True,
                         endpoint_url=static["s3.endpoint"], client_kwargs={"region_name": "us-east-1"})
    requests_n = 40
    measures = {"HEAD": lambda fs: fs.call_s3("head_object", Bucket=bucket, Key=key),
                "GET 8 MiB": lambda fs: fs.cat_file(path, start=0, end=8 << 20)}
    print()
    print(f"{'request':12} {'signed':>10} {'static keys':>12} {'signer adds':>12} {'share':>7}")
    for name, call in measures.items():
        signed, unsigned = [], []
        for _ in range(rounds):
            for fs, out in ((signing_fs, signed), (plain, unsigned)):
                call(fs)  # warm the connection
                out.append(timed(lambda fs_=fs, call_=call: [call_(fs_) for _ in range(requests_n)]) / requests_n)
        a, b = median(signed), median(unsigned)
        print(f"{name:12} {a * 1000:8.2f}ms {b * 1000:10.2f}ms {(a - b) * 1000:10.2f}ms {(a - b) / a:6.1%}", flush=True)
    cat.close()


def designs(lake: Any, signer: Any, static: dict, rounds: int, append: Any) -> None:
    """The PyArrow signing designs: ours, a re-signing proxy in front of PyArrow's own client, and
    PyArrow's own client with static keys (no signing: the ceiling of any design that keeps it)."""
    cat = signing_catalog(lake, signer, "pyarrow")
    table = cat.load_table(f"{NS}.big")
    ours = table.io
    scratch = _scratch(cat, "append_designs", append)["ours"]
    scratch_signing = scratch.io
    proxy_for = {}
    for name, t in (("big", table), ("scratch", scratch)):
        proxy_for[name] = ResigningProxy(lake.info.s3_endpoint, t.io.signer)
    props = dict(ours.properties)
    options = {
        "ours: a filesystem over the signing s3fs, signed resumable writes": (lambda: ours, lambda: scratch_signing),
        "PyArrow's S3 client + local re-signing proxy (prototype)": (
            lambda: native_pyarrow_io(props, proxy_for["big"].endpoint, ("local", "local")),
            lambda: native_pyarrow_io(props, proxy_for["scratch"].endpoint, ("local", "local"))),
        "PyArrow's S3 client, static keys, no signing (ceiling)": (
            lambda: native_pyarrow_io(props, static["s3.endpoint"].split("://", 1)[1],
                                      (static["s3.access-key-id"], static["s3.secret-access-key"])),) * 2,
    }
    times: dict[str, dict[str, list[float]]] = {name: {"scan": [], "append": []} for name in options}
    rows = table.scan().to_arrow().num_rows
    for r in range(rounds):
        order = list(options) if r % 2 == 0 else list(reversed(options))
        for name in order:
            scan_io, append_io = options[name]
            table.io = scan_io()
            times[name]["scan"].append(_scan(table, rows))
            scratch.io = append_io()
            times[name]["append"].append(timed(lambda: scratch.append(append)))
    print()
    print(f"{'PyArrow signing design':66} {'scan':>8} {'append':>8}   (medians of {rounds}; {rows:,} rows, {append.nbytes / 1e6:.0f} MB)")
    for name in options:
        print(f"{name:66} {median(times[name]['scan']):7.2f}s {median(times[name]['append']):7.2f}s", flush=True)
    for proxy in proxy_for.values():
        proxy.stop()
    cat.close()


if __name__ == "__main__":
    sys.exit(main())
