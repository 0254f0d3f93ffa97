"""Benchmark: what a create through the lakehouse's location guard costs in an empty namespace and
in one of N tables (the guard's cost must not grow with the namespace).

The N tables are created on SeaweedFS's own port with the admin keys (real creates, several at a
time: the quickest honest way to fill a namespace), before the guard first sees the namespace. Then
creates alternate between the two namespaces through the guard, so the ratio holds on a busy
machine: the first (the guard's first look, which starts building the namespace's index in the
background), `creates` each while the index is built, one create over an existing name (which
needs the whole index: it waits for the build), and `creates` each with the index; medians.
`--older`: the lakehouse is restarted on its data directory after the fill, so the namespace is
older than the guard (no quick check there): how long the guard's indexing at start takes, then
creates alternating as above:

    python benchmarks/bench_guard_namespace_size.py [tables] [creates] [--delegation remote-signing] [--older]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.lakehouse_rest import Rest, fill_namespace, timed_create


def _alternating(rest: Rest, namespaces: tuple[str, str], creates: int) -> dict[str, float]:
    """Median seconds of `creates` creates in each namespace, alternating."""
    times: dict[str, list[float]] = {ns: [] for ns in namespaces}
    for _ in range(creates):
        for ns in namespaces:
            times[ns].append(timed_create(rest, ns))
    return {ns: statistics.median(v) for ns, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tables", nargs="?", type=int, default=5000)
    parser.add_argument("creates", nargs="?", type=int, default=20)
    parser.add_argument("--delegation", default="vended-credentials")
    parser.add_argument("--older", action="store_true", help="restart the lakehouse after the fill")
    args = parser.parse_args()
    if args.older:
        _older(args)
        return
    with start_lakehouse(delegation=args.delegation) as lake:
        info = lake.info
        guarded, raw = Rest(info), Rest(info, f"http://127.0.0.1:{info.ports['iceberg']}")
        full = "full" + uuid.uuid4().hex[:6]
        started = time.perf_counter()
        fill_namespace(raw, full, args.tables)
        filled = time.perf_counter() - started
        empty = guarded.namespace("empty")
        both = (empty, full)
        timed_create(guarded, guarded.namespace("warm"))  # the guard's first create of all warms its clients up
        first = {ns: timed_create(guarded, ns, "first") for ns in both}
        building = _alternating(guarded, both, args.creates)
        again = {empty: timed_create(guarded, empty, "first"), full: timed_create(guarded, full, "t000000")}
        indexed = _alternating(guarded, both, args.creates)
    print(f"filled a namespace with {args.tables} tables on SeaweedFS's port in {filled:.1f} s")
    print(f"create through the guard ({args.delegation}), ms (medians of {args.creates}):")
    print(f"  {'':16}{'first':>9}{'building':>10}{'over a name':>13}{'indexed':>9}")
    for label, ns in (("empty namespace", empty), (f"{args.tables} tables", full)):
        print(f"  {label:16}{first[ns] * 1000:9.1f}{building[ns] * 1000:10.1f}{again[ns] * 1000:13.1f}{indexed[ns] * 1000:9.1f}")
    print(f"  ratio {args.tables} tables / empty: first {first[full] / first[empty]:.2f}, while the index is built "
          f"{building[full] / building[empty]:.2f}, with the index {indexed[full] / indexed[empty]:.2f}")


def _older(args: argparse.Namespace) -> None:
    """The namespace filled, the lakehouse restarted on the same data: its guard indexes it as it starts."""
    with tempfile.TemporaryDirectory() as data:
        with start_lakehouse(data_dir=data, delegation=args.delegation) as lake:
            full = "full" + uuid.uuid4().hex[:6]
            started = time.perf_counter()
            fill_namespace(Rest(lake.info, f"http://127.0.0.1:{lake.info.ports['iceberg']}"), full, args.tables)
            filled = time.perf_counter() - started
        started = time.perf_counter()
        with start_lakehouse(data_dir=data, delegation=args.delegation) as lake:
            up = time.perf_counter() - started
            assert lake.signer.guard.indexed_at_start.wait(600), "the guard's indexing at start did not end in 600 s"
            indexed_at = time.perf_counter() - started
            guarded = Rest(lake.info)
            empty = guarded.namespace("empty")
            first = {ns: timed_create(guarded, ns, "first") for ns in (empty, full)}
            indexed = _alternating(guarded, (empty, full), args.creates)
    print(f"filled a namespace with {args.tables} tables on SeaweedFS's port in {filled:.1f} s; restarted: up in {up:.1f} s, "
          f"the guard had indexed it {indexed_at:.1f} s after the start began")
    print(f"create through the guard ({args.delegation}) in a namespace older than it, ms: first {first[full] * 1000:.1f} "
          f"against {first[empty] * 1000:.1f} empty ({first[full] / first[empty]:.2f}x); medians of {args.creates}: "
          f"{indexed[full] * 1000:.1f} against {indexed[empty] * 1000:.1f} ({indexed[full] / indexed[empty]:.2f}x)")


if __name__ == "__main__":
    main()
