"""Failures of plain Spark actions (`spark.sql`) arrive as one-line package errors, the original
Py4JJavaError kept as the cause: real Spark, the real Iceberg runtime and SeaweedFS, with the
catalog fault proxy for a commit whose state can't be known."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions import captured

from pyspark_catalog_ext.errors import CatalogExtError, CatalogNotFoundError, CatalogUnsupportedError, CommitStateUnknownError
from tests.helpers import add_spark_catalog
from tests.servers import CatalogProxy


@pytest.fixture(scope="module")
def ns(spark):
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.errs")
    spark.sql("CREATE TABLE IF NOT EXISTS lake.errs.t USING iceberg AS SELECT id FROM range(3)")
    return "lake.errs"


def _one_line_with_cause(err: BaseException) -> str:
    text = str(err)
    assert "\n" not in text and len(text) < 800, text
    assert isinstance(err.__cause__, Py4JJavaError), repr(err.__cause__)
    return text


def test_rename_works_with_the_target_named_inside_the_catalog(spark, ns):
    """Spark renames within the table's catalog: the target is `<namespace>.<name>` (SeaweedFS renames)."""
    spark.sql(f"CREATE TABLE IF NOT EXISTS {ns}.r USING iceberg AS SELECT id FROM range(3)")
    spark.sql(f"DROP TABLE IF EXISTS {ns}.r2")
    spark.sql(f"ALTER TABLE {ns}.r RENAME TO errs.r2")
    assert spark.table(f"{ns}.r2").count() == 3
    spark.sql(f"DROP TABLE {ns}.r2")


def test_a_rename_target_with_the_catalog_name_says_what_is_wrong_not_that_rename_is_unsupported(spark, ns):
    """`RENAME TO lake.errs.t2` asks catalog `lake` for namespace lake.errs, which does not exist: the
    line says so (and how to write it), not that the catalog cannot rename."""
    with pytest.raises(CatalogNotFoundError) as err:
        spark.sql(f"ALTER TABLE {ns}.t RENAME TO {ns}.t2")
    text = _one_line_with_cause(err.value)
    assert "does not support" not in text and "RENAME TO <namespace>.<new name>" in text, text
    with pytest.raises(CatalogNotFoundError) as err:
        spark.sql(f"ALTER TABLE {ns}.t RENAME TO no_such_ns.t2")
    text = _one_line_with_cause(err.value)
    assert "does not support" not in text and "namespace" in text, text
    assert spark.table(f"{ns}.t").count() == 3  # nothing changed


def test_with_the_catalogs_error_type_kept_the_line_names_the_catalog_in_the_target(spark, ns):
    with pytest.raises(CatalogNotFoundError) as err:
        spark.sql(f"ALTER TABLE {ns}.t RENAME TO {ns}.t2")
    assert str(err.value).startswith("the rename target is not in this catalog: it starts with the catalog name 'lake'")


def test_create_view_on_seaweedfs_says_the_catalog_has_no_views(spark, ns):
    with pytest.raises(CatalogUnsupportedError) as err:
        spark.sql(f"CREATE VIEW {ns}.v AS SELECT 1 AS x")
    assert "does not support views (CREATE VIEW)" in _one_line_with_cause(err.value)


def test_other_errors_stay_pysparks_and_survive_a_new_session(spark, ns):
    with pytest.raises(captured.AnalysisException) as err:
        spark.sql(f"SELECT * FROM {ns}.no_such_table")
    assert not isinstance(err.value, CatalogExtError)
    # Every new SparkSession re-installs PySpark's handler: ours stays under it.
    spark.newSession()
    with pytest.raises(CatalogUnsupportedError):
        spark.sql(f"CREATE VIEW {ns}.v2 AS SELECT 1 AS x")


def test_ctas_whose_commit_state_is_unknown(spark, lakehouse, ns):
    """502 on every commit attempt and a table that shows nothing: the shim can't tell whether the
    commit landed, and the user gets that in one line instead of a Java stack trace."""
    with CatalogProxy(lakehouse.info.iceberg_uri) as proxy:
        add_spark_catalog(spark, lakehouse, "errfx", proxy.url)
        spark.conf.set("spark.sql.catalog.errfx.rest.client.socket-timeout-ms", "2500")
        spark.conf.set("spark.sql.catalog.errfx.catalog-ext.commit.base-delay-ms", "50")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS errfx.errs")
        proxy.faults.add("error", "POST", r"/namespaces/errs/tables/unknown_ctas$", times=50, status=502)
        with pytest.raises(CommitStateUnknownError) as err:
            spark.sql("CREATE TABLE errfx.errs.unknown_ctas USING iceberg AS SELECT id FROM range(10)")
        proxy.faults.clear()
    text = _one_line_with_cause(err.value)
    assert "commit state unknown" in text and "nothing was deleted" in text, text
