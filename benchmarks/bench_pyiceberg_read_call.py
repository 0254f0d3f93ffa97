"""Benchmark 4: the cost of one PyIceberg read call with refreshing credentials vs static keys.

On the embedded lakehouse, one table with vended keys; for each FileIO (PyArrow, fsspec) compare
the table's `RefreshingFileIO` against the same FileIO class built once with the same vended keys
(what plain PyIceberg does). Two measures, alternating rounds in one run, medians and ratios:
- `new_input(path)`: the pure per-call overhead (credential lookup, delegate choice);
- `new_input(path).open().read()`: a whole small-file read from S3 (what a scan does per file).

    python benchmarks/bench_pyiceberg_read_call.py [rounds] [calls]
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable

from _common import median

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}


def per_call(fn: Callable[[str], object], paths: list[str], calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        fn(paths[i % len(paths)])
    return (time.perf_counter() - started) / calls


def main() -> None:
    import pyarrow as pa

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    with start_lakehouse() as lake:
        setup = pyiceberg_catalog(lake, refresh=False)
        setup.create_namespace_if_not_exists("bench")
        if setup.table_exists("bench.read_call"):
            setup.drop_table("bench.read_call")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        setup.create_table("bench.read_call", schema, properties={"write.target-file-size-bytes": "1600"}).append(
            pa.table({"id": pa.array(range(2000), pa.int64())}, schema=schema))  # 20 files of 100 rows
        print(f"{'FileIO':8} {'measure':24} {'refresh':>12} {'static':>12} {'ratio':>7}")
        for name, impl in FILEIOS.items():
            cat = pyiceberg_catalog(lake, **{"py-io-impl": impl})
            table = cat.load_table("bench.read_call")
            paths = [task.file.file_path for task in table.scan().plan_files()]
            refreshing = table.io
            module, _, cls = impl.rpartition(".")
            static_io = getattr(importlib.import_module(module), cls)(dict(refreshing.properties))  # same keys, built once
            measures = {
                "new_input(path)": (lambda io: lambda p: io.new_input(p), calls),
                "new_input().open().read()": (lambda io: lambda p: io.new_input(p).open().read(), max(200, calls // 100)),
            }
            for measure, (make, n) in measures.items():
                ours, theirs = [], []
                per_call(make(refreshing), paths, n // 10)  # warm both
                per_call(make(static_io), paths, n // 10)
                for _ in range(rounds):
                    ours.append(per_call(make(refreshing), paths, n))
                    theirs.append(per_call(make(static_io), paths, n))
                a, b = median(ours), median(theirs)
                print(f"{name:8} {measure:24} {a * 1e6:10.2f}us {b * 1e6:10.2f}us {a / b:7.3f}")
            cat.close()


if __name__ == "__main__":
    main()
