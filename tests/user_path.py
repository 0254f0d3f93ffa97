"""Step code shared by the emulated (tests/slow/test_emulated_catalogs.py) and the real-server
(tests/slow/test_real_catalogs.py) user paths."""
from __future__ import annotations

from tests.refresh_support import slow

# The doctor's engine and inventory probes are the user path's own steps: step 9 runs the rest.
DOCTOR_FAST = ["--skip", "spark,pyiceberg,inventory"]


def ctas_sql(spark, table: str, rows: int, ms: int) -> None:
    """Step 2: CREATE TABLE AS SELECT, one file per row, each row `ms` slow."""
    spark.sql(f"CREATE TABLE {table} TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
              f"SELECT id, id * 3 AS v FROM range(0, {rows}, 1, 1) WHERE {slow(ms)}")


def ctas_writeto(spark, table: str, rows: int, ms: int) -> None:
    """Step 2: the DataFrame way, writeTo().create()."""
    df = spark.range(0, rows, 1, 1).where(slow(ms)).selectExpr("id", "id * 3 AS v")
    df.writeTo(table).tableProperty("write.target-file-size-bytes", "1").create()
