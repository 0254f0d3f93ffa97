"""Benchmark: what a create through the lakehouse's location guard costs in an empty namespace and
in one of N tables (the guard's cost must not grow with the namespace).

The N tables are created on SeaweedFS's own port with the admin keys (real creates, several at a
time: the quickest honest way to fill a namespace), before the guard first sees the namespace. Then
creates alternate between the two namespaces through the guard, so the ratio holds on a busy
machine; medians of `creates` each, after one create per namespace (the guard's first look):

    python benchmarks/bench_guard_namespace_size.py [tables] [creates] [--delegation remote-signing]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from _common import ROOT  # noqa: F401  (puts the repository on sys.path)

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.lakehouse_rest import Rest, fill_namespace, timed_create


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("tables", nargs="?", type=int, default=5000)
    parser.add_argument("creates", nargs="?", type=int, default=20)
    parser.add_argument("--delegation", default="vended-credentials")
    args = parser.parse_args()
    with start_lakehouse(delegation=args.delegation) as lake:
        info = lake.info
        guarded, raw = Rest(info), Rest(info, f"http://127.0.0.1:{info.ports['iceberg']}")
        full = "full" + uuid.uuid4().hex[:6]
        started = time.perf_counter()
        fill_namespace(raw, full, args.tables)
        filled = time.perf_counter() - started
        empty = guarded.namespace("empty")
        first = {ns: timed_create(guarded, ns) for ns in (empty, full)}
        times: dict[str, list[float]] = {empty: [], full: []}
        for _ in range(args.creates):
            for ns in (empty, full):
                times[ns].append(timed_create(guarded, ns))
    med = {ns: statistics.median(v) for ns, v in times.items()}
    print(f"filled a namespace with {args.tables} tables on SeaweedFS's port in {filled:.1f} s")
    print(f"create through the guard ({args.delegation}), median of {args.creates}:")
    print(f"  empty namespace  {med[empty] * 1000:8.1f} ms  (first create {first[empty] * 1000:.1f} ms)")
    print(f"  {args.tables:5} tables     {med[full] * 1000:8.1f} ms  (first create {first[full] * 1000:.1f} ms)")
    print(f"  ratio {args.tables} tables / empty: {med[full] / med[empty]:.2f}")


if __name__ == "__main__":
    main()
