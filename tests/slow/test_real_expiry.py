"""The promise itself, with nothing faked: SeaweedFS vends 900 s credentials and a Spark CTAS runs
for about 17 minutes. Its two tasks read a committed table file by file and write a new data file
every 85 s, so both the staged table's and the source table's first credentials expire mid-task.

The loopback proxies only watch (no rewriting, no aging): they record which access key each S3
request used and what SeaweedFS answered, so the test can show that the first credentials really
died mid-job and that no request was rejected.
"""

from __future__ import annotations

import time

import pytest

from pyspark_catalog_ext.refresh import RefreshPolicy
from pyspark_catalog_ext.spark.credentials import attach
from tests.refresh_support import add_spark_catalog, slow, statuses
from tests.servers import CatalogProxy, S3ExpiryProxy

CREDENTIAL_SECONDS = 900  # SeaweedFS's minimum, the embedded lakehouse's default
FILES_PER_TASK = 12
ROWS_PER_FILE = 1000
MS_PER_ROW = 85  # 85 s per file, 1020 s per task


@pytest.fixture(scope="module")
def watched(spark, lakehouse):
    with S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)) as s3, \
            CatalogProxy(lakehouse.info.iceberg_uri, s3_endpoint=s3.url) as catalog:
        add_spark_catalog(spark, lakehouse, "real", catalog.url)
        manager = attach(spark, policy=RefreshPolicy())  # the defaults: 60 s checks, renew 5 min ahead
        spark.sql("CREATE NAMESPACE IF NOT EXISTS real.db")
        yield manager, s3


def test_ctas_and_read_outlive_real_900s_credentials(spark, watched, lakehouse):
    manager, s3 = watched
    files = 2 * FILES_PER_TASK
    (spark.range(0, files * ROWS_PER_FILE, 1, files)
     .selectExpr("id", "id * 7 AS v")
     .writeTo("real.db.expiry_src").create())
    assert spark.table("real.db.expiry_src.files").count() == files

    s3.reset_counters()
    started = time.time()
    reader = PyIcebergReader(lakehouse, "db.expiry_src", files * ROWS_PER_FILE)  # beside the Spark job
    (spark.read
     .option("file-open-cost", str(1 << 20))  # every small file weighs 1 MiB...
     .option("split-size", str(FILES_PER_TASK << 20))  # ...so each task reads 12 of them in turn
     .table("real.db.expiry_src")
     .where(slow(MS_PER_ROW))
     .writeTo("real.db.expiry_ctas")
     .tableProperty("write.target-file-size-bytes", "1")  # roll a new file every 1000 rows
     .tableProperty("write.distribution-mode", "none")  # no shuffle: the reading tasks write
     .create())
    elapsed = time.time() - started
    reader.stop_and_check(outlived=started + CREDENTIAL_SECONDS + 5)

    total = files * ROWS_PER_FILE
    assert elapsed > CREDENTIAL_SECONDS + 60
    assert spark.table("real.db.expiry_ctas").count() == total
    assert spark.sql("SELECT sum(v) FROM real.db.expiry_ctas").first()[0] == 7 * sum(range(total))

    # No S3 request was rejected, and requests kept flowing after the first credentials died.
    statuses_seen = {entry["status"] for entry in s3.log}
    assert 403 not in statuses_seen, [e for e in s3.log if e["status"] == 403][:3]
    first_key_use = {}
    for entry in s3.log:
        first_key_use.setdefault(entry["akid"], entry["at"])
    first_key = min(first_key_use, key=first_key_use.get)
    late = [e for e in s3.log if e["at"] > started + CREDENTIAL_SECONDS + 5]
    assert late, "no S3 request after the first credentials expired"
    assert all(e["akid"] != first_key for e in late)
    late_writes = [e for e in late if e["method"] == "PUT"]
    late_reads = [e for e in late if e["method"] == "GET"]
    assert late_writes and late_reads

    # Both tables were refreshed ahead of expiry, by the strategy that fits each.
    ctas = [s for s in statuses(manager, "real.db.expiry_ctas") if s.refreshes_by_strategy.get("re-stage")]
    source = [s for s in statuses(manager, "real.db.expiry_src") if s.refresh_count > 0]
    assert ctas and ctas[0].failure_count == 0
    assert source and source[0].failure_count == 0


class PyIcebergReader:
    """A PyIceberg job beside the Spark one: scans a table once a minute on the same lakehouse,
    with real 900 s vended keys and the default refresh policy, until stopped."""

    def __init__(self, lakehouse, table: str, rows: int) -> None:
        import threading

        from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

        self.catalog = pyiceberg_catalog(lakehouse)
        self.table = self.catalog.load_table(table)
        self.rows, self.scans, self.errors = rows, [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pyiceberg-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.scans.append((time.time(), self.table.scan().to_arrow().num_rows))
            except Exception as exc:  # noqa: BLE001 - recorded, asserted on at the end
                self.errors.append(repr(exc)[:300])
            if self._stop.wait(60):
                return

    def stop_and_check(self, outlived: float) -> None:
        self._stop.set()
        self._thread.join(120)
        self.catalog.close()
        assert not self.errors, self.errors[:2]
        assert all(n == self.rows for _, n in self.scans), self.scans
        assert any(at > outlived for at, _ in self.scans), "the PyIceberg reader did not outlive the first keys"
        assert self.table.io.entry.generation >= 2  # renewed ahead of expiry, in the background
