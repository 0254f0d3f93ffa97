"""The one Java-error table (`java_errors._known`), for PySpark calls and for the shim's own
methods (staging). The table reads only class names, messages and causes, so the Java exceptions
here are plain objects answering the five Py4J calls it makes; the real Py4J path runs in
tests/spark/test_spark_errors.py and tests/spark/test_staging.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pyspark_catalog_ext.errors import (
    CatalogConflictError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    StaleTableError,
)
from pyspark_catalog_ext.spark.java_errors import translate
from pyspark_catalog_ext.staging.staged import _translate as staged_translate

ICEBERG = "org.apache.iceberg.exceptions."


@dataclass
class JavaThrowable:
    """What java_errors reads of a Py4J JavaObject for a Throwable."""

    name: str
    message: str
    cause: JavaThrowable | None = None

    def getClass(self) -> JavaThrowable:  # noqa: N802 - the Java method's name
        return self

    def getName(self) -> str:  # noqa: N802
        return self.name

    def getMessage(self) -> str:  # noqa: N802
        return self.message

    def getCause(self) -> JavaThrowable | None:  # noqa: N802
        return self.cause

    def getStackTrace(self) -> list:  # noqa: N802 - no SparkCatalog frame: not a Spark catalog call
        return []

    def equals(self, other: object) -> bool:
        return other is self


class Py4JLike(Exception):
    def __init__(self, java_exception: JavaThrowable) -> None:
        super().__init__("An error occurred while calling z:io.catalogext.shim.PythonApi.commit")
        self.java_exception = java_exception


UNKNOWN = JavaThrowable(ICEBERG + "CommitStateUnknownException",
                        "answer lost\nCannot determine whether the commit was successful or not, ...",
                        JavaThrowable("java.lang.RuntimeException", "the catalog's answer was lost (502, 5 attempt(s))"))


def test_commit_outcomes_are_translated_everywhere_with_the_same_words():
    plain = translate(UNKNOWN)
    staged = translate(UNKNOWN, subject="commit db.t")
    assert isinstance(plain, CommitStateUnknownError) and isinstance(staged, CommitStateUnknownError)
    assert str(staged) == "commit db.t: " + str(plain)
    assert "the catalog's answer was lost (502, 5 attempt(s))" in str(plain)  # the cause, not Iceberg's paragraph
    assert "nothing was deleted" in str(plain) and "\n" not in str(plain)
    failed = JavaThrowable(ICEBERG + "CommitFailedException", "Requirement failed: branch main has changed")
    assert isinstance(translate(failed), CommitFailedError)
    stale = JavaThrowable(ICEBERG + "CommitFailedException", "table db.t was replaced by another table")
    assert isinstance(translate(stale, subject="replace db.t"), StaleTableError)


@pytest.mark.parametrize("name, error", [
    (ICEBERG + "AlreadyExistsException", CatalogConflictError),
    (ICEBERG + "NoSuchTableException", CatalogNotFoundError),
    (ICEBERG + "ServiceFailureException", CatalogUnavailableError),
    ("java.lang.IllegalArgumentException", ConfigError),
])
def test_refusals_are_ours_only_on_the_shims_own_methods(name, error):
    java = JavaThrowable(name, "Table already exists: db.t")
    assert translate(java) is None  # on spark.sql etc. PySpark's own error stands
    assert isinstance(translate(java, subject="create db.t"), error)
    assert str(translate(java, subject="create db.t")).startswith("create db.t failed: ")


def test_staging_uses_the_same_table():
    err = staged_translate(Py4JLike(JavaThrowable(ICEBERG + "AlreadyExistsException", "exists")), "db.t", "stage create")
    assert isinstance(err, CatalogConflictError) and "use stage_replace()" in str(err)
    assert str(staged_translate(Py4JLike(UNKNOWN), "db.t", "commit")) == str(translate(UNKNOWN, subject="commit db.t"))
    other = Py4JLike(JavaThrowable("java.lang.NullPointerException", "boom"))
    assert staged_translate(other, "db.t", "commit") is other
    plain = ValueError("not from the JVM")
    assert staged_translate(plain, "db.t", "commit") is plain

    class Converted(Exception):  # PySpark's CapturedException of a shim call keeps the JVM's exception as _origin
        _origin = JavaThrowable("java.lang.IllegalArgumentException", "stage option 'x' must be a number")

    bad_option = staged_translate(Converted("IllegalArgumentException: ...\n\nJVM stacktrace: ..."), "db.t", "stage create")
    assert isinstance(bad_option, ConfigError) and str(bad_option) == "stage create db.t failed: stage option 'x' must be a number"


@dataclass
class Frame:
    cls: str
    method: str

    def getClassName(self) -> str:  # noqa: N802
        return self.cls

    def getMethodName(self) -> str:  # noqa: N802
        return self.method


@dataclass
class InSparkCatalog(JavaThrowable):
    """A Java exception thrown under SparkCatalog.<method> (what the unsupported-operation rule reads)."""

    method: str = "stageCreate"

    def getStackTrace(self) -> list:  # noqa: N802
        return [Frame("org.apache.iceberg.rest.RESTSessionCatalog", "createTable"),
                Frame("org.apache.iceberg.spark.SparkCatalog", self.method)]


def test_a_refused_stage_create_says_a_ctas_cannot_be_atomic_and_what_to_do():
    # Glue, S3 Tables: the stage-create is answered 400; the line names the limit and the non-atomic way on.
    java = InSparkCatalog(ICEBERG + "BadRequestException", "Malformed request: s3tables: stage-create is not supported")
    err = translate(java)
    text = str(err)
    assert isinstance(err, CatalogUnsupportedError) and "\n" not in text, text
    assert text.startswith("the catalog does not support stageCreate, so a CTAS or writeTo().create() cannot be "
                           "atomic here: create the table (CREATE TABLE), then INSERT INTO it"), text
    assert "stage-create is not supported" in text
    replace = str(translate(InSparkCatalog(ICEBERG + "BadRequestException", "no", method="stageCreateOrReplace")))
    assert "CREATE OR REPLACE TABLE ... AS SELECT" in replace and "cannot be atomic" in replace, replace
    # A read-only catalog's 405 (Unity 0.6) refuses every write: no "create the table, then insert" advice.
    read_only = str(translate(InSparkCatalog(ICEBERG + "RESTException", "Unable to process: read-only (405)")))
    assert read_only.startswith("the catalog does not support stageCreate (RESTException") and "atomic" not in read_only


def test_catalog_reads_refusals_keep_their_status():
    """The Spark catalog reads (`SparkCatalogReader`): a route the catalog lacks, a bad request (a
    catalog without nested namespaces rejects ?parent=, which cleanup's walk reads as "none below"),
    and Iceberg's unhandled answers become errors.py classes with the HTTP status."""
    from pyspark_catalog_ext.errors import CatalogError, CatalogUnsupportedError

    subject = "GET /polaris/v1/{prefix}/applicable-policies in Spark catalog lake"
    route = JavaThrowable("java.lang.UnsupportedOperationException",
                          "Server does not support endpoint: GET polaris/v1/{prefix}/applicable-policies "
                          "(HTTP 405 MethodNotAllowed: nope)")
    missing = translate(route, subject=subject)
    assert isinstance(missing, CatalogUnsupportedError) and missing.status == 405
    assert str(missing).startswith(subject + " failed: the catalog does not support it (Server does not support")
    not_implemented = translate(JavaThrowable("java.lang.UnsupportedOperationException", "Not implemented: x"),
                                subject=subject)
    assert isinstance(not_implemented, CatalogUnsupportedError) and not_implemented.status == 501
    other = JavaThrowable("java.lang.UnsupportedOperationException", "Cannot drop a branch")  # not the catalog's
    assert translate(other, subject=subject) is None
    bad = translate(JavaThrowable(ICEBERG + "BadRequestException", "Malformed request: parent"), subject=subject)
    assert type(bad) is CatalogError and bad.status == 400
    rest = translate(JavaThrowable(ICEBERG + "RESTException", "Unable to process: teapot (HTTP 418 x: y)"),
                     subject=subject)
    assert type(rest) is CatalogError and rest.status == 418
    assert translate(JavaThrowable(ICEBERG + "BadRequestException", "x")) is None  # PySpark's own calls: unchanged


def test_the_java_exception_is_found_on_pyspark_converted_errors_too():
    from pyspark_catalog_ext.spark.java_errors import java_exception_of

    java = JavaThrowable("java.lang.UnsupportedOperationException", "Server does not support endpoint: GET x")

    class Converted(Exception):  # PySpark's CapturedException keeps the JVM's exception as _origin
        _origin = java

    assert java_exception_of(Py4JLike(java)) is java and java_exception_of(Converted()) is java
    assert java_exception_of(ValueError("no JVM")) is None


def test_a_redirect_refused_by_the_shim_is_the_python_clients_redirect_error():
    from pyspark_catalog_ext.errors import CatalogRedirectError

    java = JavaThrowable("io.catalogext.shim.errors.CatalogRedirectException",
                         "POST /v1/w/namespaces/db/tables answered with HTTP 307, a redirect to http://other/x; not followed")
    err = translate(java)
    assert isinstance(err, CatalogRedirectError) and err.status == 307 and "\n" not in str(err)
