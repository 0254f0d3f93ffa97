"""Step code shared by the emulated (tests/slow/test_emulated_catalogs.py) and the real-server
(tests/slow/test_real_catalogs.py) user paths."""
from __future__ import annotations

from tests.refresh_support import slow

# The doctor's engine and inventory probes are the user path's own steps: step 9 runs the rest.
DOCTOR_FAST = ["--skip", "spark,pyiceberg,inventory"]
# Step 10, the doctor's client probes (DuckDB, Trino) with what they need: the Spark CTAS they read, PyIceberg.
CLIENT_PROBES_ONLY = ["--skip", "inventory,vended,scope,refresh,staging,idempotency,signing,stores"]


def ctas_sql(spark, table: str, rows: int, ms: int) -> None:
    """Step 2: CREATE TABLE AS SELECT, one file per row, each row `ms` slow."""
    spark.sql(f"CREATE TABLE {table} TBLPROPERTIES ('write.target-file-size-bytes'='1') AS "
              f"SELECT id, id * 3 AS v FROM range(0, {rows}, 1, 1) WHERE {slow(ms)}")


def ctas_writeto(spark, table: str, rows: int, ms: int) -> None:
    """Step 2: the DataFrame way, writeTo().create()."""
    df = spark.range(0, rows, 1, 1).where(slow(ms)).selectExpr("id", "id * 3 AS v")
    df.writeTo(table).tableProperty("write.target-file-size-bytes", "1").create()



def referenced_files(metadata_location: str, io_properties: dict[str, str]) -> set[str]:
    """Every file a committed table references over all its snapshots, read from its metadata with
    PyIceberg and the given FileIO properties (not through a catalog, so a remote-signing catalog
    works too): metadata files (current + log), manifest lists, manifests, data and delete files."""
    from pyiceberg.table import StaticTable

    table = StaticTable.from_metadata(metadata_location, properties=io_properties)
    out = {metadata_location} | {entry.metadata_file for entry in table.metadata.metadata_log}
    for snapshot in table.metadata.snapshots:
        out.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            out.add(manifest.manifest_path)
            out |= {entry.data_file.file_path for entry in manifest.fetch_manifest_entry(table.io)}
    return out


def assert_referenced_files_exist(metadata_location: str, lakehouse) -> None:
    """After a lost answer or a cleanup: nothing the table still references is gone from S3 (read
    and checked with the lakehouse's admin keys)."""
    from tests.spark.test_staging import s3_admin, s3_exists

    info = lakehouse.info
    files = referenced_files(metadata_location, {
        "s3.endpoint": info.s3_endpoint, "s3.access-key-id": info.access_key, "s3.secret-access-key": info.secret_key,
        "s3.region": info.region or "us-east-1", "s3.force-virtual-addressing": "false"})
    admin = s3_admin(lakehouse)
    missing = sorted(f for f in files if not s3_exists(admin, f))
    assert len(files) > 1 and not missing, f"{metadata_location}: {len(missing)} referenced file(s) missing: {missing[:5]}"
