"""Benchmark: PyIceberg appends to GCS and ADLS with the package's streaming writers (a GCS resumable
upload, ADLS staged blocks) and 10 s tokens renewed during the append, against stock PyIceberg with
long-lived tokens, side by side in one run, on the emulators of the store tests (fake-gcs-server behind
its token-checking front, Azurite; tests/stores).

For each store, rounds alternate ours and stock; each round appends `--mb` MB of random doubles (they
do not compress) into a fresh table, timed. Printed per store: median seconds and MB/s of each side,
the throughput ratio (stock time / ours: 1.00 = as fast), the peak local disk of the append (temporary
files of this process, sampled every 5 ms), the peak resident memory above the append's start
(`RssPeak`; it includes Arrow's own encoding buffers on both sides), and our tokens renewed and
refused during our appends.

- **ours**: `pyiceberg_catalog` (the package's FileIO and writers), tokens of 10 s (renewed at 7.5 s).
- **stock**: PyIceberg's own `RestCatalog` on the same catalog, tokens of an hour. Its FileIO is the
  one that can use a vended token of that store as it is: PyArrowFileIO on GCS, FsspecFileIO (adlfs)
  on ADLS (PyIceberg 0.12's PyArrowFileIO names the wrong Azure container: pyiceberg_ext/storefs.py),
  there with a connection string naming Azurite and an account SAS of an hour (stock PyIceberg reads
  no per-host endpoint). Ours uses the same FileIO class.

Files of the round are deleted after it (fake-gcs-server keeps objects in memory). Not a timed test.

    .venv/bin/python benchmarks/bench_pyiceberg_store_writes.py [--mb 1024] [--rounds 3] [--stores gcs,adls]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from _common import ROOT  # noqa: F401  (puts the repo on sys.path)

from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from pyspark_catalog_ext.refresh import RefreshPolicy
from tests.helpers import SpoolDiskPeak
from tests.stores.catalog import store_catalog

SHORT_S = 10.0  # our tokens
LONG_S = 3600.0  # stock's tokens
POLICY = RefreshPolicy(check_interval_s=0.25, min_ahead_s=0, lifetime_fraction=0.25)
FILEIO = {"gcs": "pyiceberg.io.pyarrow.PyArrowFileIO", "adls": "pyiceberg.io.fsspec.FsspecFileIO"}


class RssPeak:
    """The most resident memory above the block's start: Linux's peak (VmHWM), reset as the block
    starts (/proc/self/clear_refs), minus the resident memory then. Arrow's unused pool memory is
    released first, and the benchmark runs with a fixed malloc mmap threshold (set below), so memory
    freed by the side before is given back rather than reused unseen."""

    def __init__(self) -> None:
        self.peak, self._start = 0, 0

    @staticmethod
    def _status(key: str) -> int:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def __enter__(self) -> RssPeak:
        import gc

        import pyarrow as pa

        gc.collect()
        pa.default_memory_pool().release_unused()
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")  # resets VmHWM to the current resident size
        self._start = self._status("VmRSS")
        return self

    def __exit__(self, *exc: object) -> None:
        self.peak = self._status("VmHWM") - self._start


def random_table(mb: float) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    n = int(mb * 1024 * 1024 / 8)
    return pa.table({"v": pc.random(n)}, schema=pa.schema([pa.field("v", pa.float64(), nullable=False)]))


def one_append(cat: Any, name: str, data: Any) -> tuple[float, int, int, tuple[int, int]]:
    """(seconds, peak local disk, peak RSS above start, (renewals, refusals) of ours) of one append of
    `data` into a new table `name`."""
    cat.create_table(name, data.schema, properties={"write.target-file-size-bytes": str(512 << 20)})
    table = cat.load_table(name)  # loaded: vended a token of the lifetime set now
    with SpoolDiskPeak() as disk, RssPeak() as rss:
        start = time.perf_counter()
        table.append(data)
        took = time.perf_counter() - start
    tasks = list(cat.load_table(name).scan().plan_files())
    rows = sum(task.file.record_count for task in tasks)
    assert rows == data.num_rows, f"{name}: {rows} rows of {data.num_rows}"
    status = getattr(cat, "credentials_status", lambda: [])()
    row = next((x for x in status if x["table"].endswith(f".{name}")), None)
    tokens = (row["generation"], row["rejections"]) if row else (0, 0)
    for task in tasks:
        table.io.delete(task.file.file_path)
    cat.drop_table(name)
    return took, disk.peak, rss.peak, tokens


def bench_store(store: str, mb: float, rounds: int) -> dict[str, Any]:
    from pyiceberg.catalog.rest import RestCatalog

    data = random_table(mb)
    props = {"header.X-Iceberg-Access-Delegation": "vended-credentials", "py-io-impl": FILEIO[store]}
    with store_catalog(store, lifetime_s=SHORT_S, refresh_tokens=True, gcs_front_process=True) as stack:
        ours = pyiceberg_catalog({"uri": stack.uri, **props}, policy=POLICY)
        ours.create_namespace_if_not_exists("bench")
        stock_props = dict(props)
        if store == "adls":
            # Stock PyIceberg reads no `adls.connection-string.<host>` (the endpoint the catalog names):
            # a stock user names Azurite in a connection string, here with an account SAS of an hour.
            account = next(iter(stack.emulator.keys))
            stock_props["adls.connection-string"] = (f"BlobEndpoint={stack.emulator.endpoint(account)};"
                                                     f"SharedAccessSignature={stack.emulator.account_sas(account, LONG_S)}")
        stock = RestCatalog("stock", uri=stack.uri, **stock_props)
        out: dict[str, Any] = {side: {"s": [], "disk": 0, "rss": 0} for side in ("ours", "stock")}
        renewed = refused = 0
        for r in range(rounds):
            for side in (("ours", "stock") if r % 2 == 0 else ("stock", "ours")):
                stack.front.lifetime_s = SHORT_S if side == "ours" else LONG_S  # what the table's load is vended
                name = f"bench.{side}_{r}"
                took, disk, rss, (generations, rejections) = one_append(ours if side == "ours" else stock, name, data)
                renewed, refused = renewed + generations, refused + rejections
                out[side]["s"].append(took)
                out[side]["disk"] = max(out[side]["disk"], disk)
                out[side]["rss"] = max(out[side]["rss"], rss)
                print(f"  {store} round {r} {side}: {took:.2f} s, disk {disk} B, rss +{rss / 2**20:.0f} MiB", flush=True)
        ours.close()
    out["renewed"], out["refused"] = renewed, refused
    return out


def main() -> None:
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        # glibc raises its mmap threshold after each big free, keeping later parts on the heap: fixed,
        # each side's big buffers are mapped and unmapped, and the peak of each side is its own.
        os.environ["MALLOC_MMAP_THRESHOLD_"] = str(128 * 1024)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1024, help="MB appended per round (default 1024)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stores", default="gcs,adls")
    args = parser.parse_args()
    results = {store: bench_store(store, args.mb, args.rounds) for store in args.stores.split(",")}
    print(f"\nappend of {args.mb:.0f} MB, {args.rounds} rounds each side, medians")
    print(f"{'store':6} {'ours s':>8} {'stock s':>8} {'ours MB/s':>10} {'stock MB/s':>11} {'ratio':>6} "
          f"{'disk ours/stock':>16} {'peak RSS+ ours/stock MiB':>25} {'renewed/refused':>16}")
    for store, res in results.items():
        o, s = statistics.median(res["ours"]["s"]), statistics.median(res["stock"]["s"])
        print(f"{store:6} {o:8.2f} {s:8.2f} {args.mb / o:10.1f} {args.mb / s:11.1f} {s / o:6.3f} "
              f"{res['ours']['disk']:>7}/{res['stock']['disk']:<8} "
              f"{res['ours']['rss'] / 2**20:>12.0f}/{res['stock']['rss'] / 2**20:<12.0f} "
              f"{res['renewed']:>8}/{res['refused']:<7}")


if __name__ == "__main__":
    main()
