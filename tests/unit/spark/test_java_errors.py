"""The one Java-error table (`java_errors._known`), for PySpark calls and for the shim's own
methods (staging). The table reads only class names, messages and causes, so the Java exceptions
here are plain objects answering the five Py4J calls it makes; the real Py4J path runs in
tests/spark/test_spark_errors.py and tests/spark/test_staging.py."""

from __future__ import annotations

import json
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


def test_a_table_on_a_store_without_its_sdk_is_a_one_line_config_error_from_any_spark_call():
    """A task's failure reaches the driver inside a SparkException: the shim's one line is what the user gets."""
    line = ("catalog-ext: tables on abfss:// are on ADLS, whose SDK (Iceberg's iceberg-azure-bundle) is not on the classpath: "
            "add it with configure(store=\"adls\") or `pyspark-catalog-ext spark-conf --store adls`")
    java = JavaThrowable("org.apache.spark.SparkException", "Job aborted due to stage failure: ...",
                         JavaThrowable("io.catalogext.shim.errors.StoreSdkMissingException", line))
    err = translate(java)
    assert isinstance(err, ConfigError) and str(err) == line


# ------------------------------------------------------------------------------------------ rename
def _rename(name: str, message: str, method: str = "renameTable") -> JavaThrowable:
    return InSparkCatalog(name, message, method=method)


def _raw(type_: str, message: str, code: int = 404) -> str:
    """The message Iceberg gives when its error handler could not parse the body: the body itself."""
    return json.dumps({"error": {"message": message, "type": type_, "code": code}}, separators=(",", ":"))


def test_a_rename_into_a_missing_namespace_says_so_not_that_rename_is_unsupported():
    # Polaris's words; the same answer with its type lost on the way (the raw body as the message).
    polaris = "Cannot rename ns.t to ns2.t2. Namespace does not exist: ns2"
    for java in (_rename(ICEBERG + "NoSuchNamespaceException", polaris),
                 _rename(ICEBERG + "NoSuchTableException", _raw("NoSuchNamespaceException", polaris))):
        err = translate(java)
        text = str(err)
        assert type(err) is CatalogNotFoundError and err.status == 404, (type(err), text)
        assert text.startswith("the rename failed: the namespace 'ns2' does not exist (Cannot rename"), text
        assert "if '" not in text and "\n" not in text  # a one-level namespace: no catalog hint


def test_a_rename_target_that_starts_with_a_catalog_name_is_said_to_be_outside_the_catalog():
    # `ALTER TABLE doctor.ns.t RENAME TO doctor.ns.t2`: Spark asks catalog `doctor` for namespace doctor.ns.
    # Without a SparkSession to ask which catalogs exist, the line says what to do if `doctor` is one;
    # spark_catalog always is (tests/spark/test_spark_errors.py runs it with a session's own catalog).
    seaweedfs = _rename(ICEBERG + "NoSuchNamespaceException", "Namespace does not exist: [doctor ns]")
    text = str(translate(seaweedfs))
    assert "the namespace 'doctor.ns' does not exist" in text and "if 'doctor' is a catalog, leave it out" in text, text
    builtin = translate(_rename(ICEBERG + "NoSuchNamespaceException",
                                "Cannot rename ns.t to spark_catalog.ns.t2. Namespace does not exist: spark_catalog.ns"))
    assert type(builtin) is CatalogNotFoundError
    assert str(builtin).startswith("the rename target is not in this catalog: it starts with the catalog name "
                                   "'spark_catalog'"), str(builtin)
    assert "RENAME TO <namespace>.<new name>" in str(builtin)


def test_a_rename_of_a_missing_table_says_the_table_is_missing():
    for java in (_rename(ICEBERG + "NoSuchTableException", "Table does not exist: ns.t"),
                 _rename(ICEBERG + "NoSuchTableException", _raw("NoSuchTableException", "Table does not exist: ns.t"))):
        err = translate(java)
        assert type(err) is CatalogNotFoundError, (type(err), str(err))
        assert "the catalog says the table does not exist (Table does not exist: ns.t)" in str(err)
    view = translate(_rename(ICEBERG + "NoSuchViewException", "View does not exist: ns.v", method="renameView"))
    assert type(view) is CatalogNotFoundError and "the view does not exist" in str(view)


def test_only_a_catalog_without_the_route_is_said_not_to_support_rename():
    no_route = [
        _rename(ICEBERG + "NoSuchTableException", _raw("NotFound", "Path not found")),  # SeaweedFS's own no-route answer
        _rename(ICEBERG + "NoSuchTableException", "Not Found"),  # a framework's text/plain 404
        _rename(ICEBERG + "NoSuchTableException", "Path not found"),  # the same, its type dropped by Iceberg
        _rename("java.lang.UnsupportedOperationException", "Server does not support endpoint: POST /v1/{prefix}/tables/rename"),
    ]
    for java in no_route:
        err = translate(java)
        assert type(err) is CatalogUnsupportedError, (java.message, type(err), str(err))
        assert str(err).startswith("the catalog does not support renaming tables (ALTER TABLE ... RENAME TO)"), str(err)
    # Elsewhere a 404 stays PySpark's error: only the catalog's rename answers are read this way.
    assert translate(InSparkCatalog(ICEBERG + "NoSuchTableException", "Table does not exist: ns.t", method="loadTable")) is None


def test_sparks_own_not_found_on_rename_names_the_likely_cause_not_a_missing_feature():
    # Iceberg's SparkCatalog.renameTable throws Spark's NoSuchTableException for the source in place of the
    # catalog's 404, its words and type gone: a missing target namespace and a missing route look the same.
    java = _rename("org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
                   "[TABLE_OR_VIEW_NOT_FOUND] The table or view `errs`.`t` cannot be found.")
    err = translate(java)
    text = str(err)
    assert type(err) is CatalogNotFoundError and err.status == 404, (type(err), text)
    assert "most often the target's namespace does not exist" in text and "RENAME TO <namespace>.<new name>" in text
    assert "does not support" not in text and "\n" not in text


def test_a_connection_lost_mid_request_is_no_missing_feature():
    # Iceberg wraps a reset connection in a RESTException; the Java table read that as "unsupported".
    lost = InSparkCatalog(ICEBERG + "RESTException", "Error occurred while processing POST request",
                          JavaThrowable("java.net.SocketException", "Connection reset"), method="createNamespace")
    err = translate(lost)
    assert type(err) is CatalogUnavailableError, (type(err), str(err))
    assert "does not support" not in str(err) and "Connection reset" in str(err) and "\n" not in str(err)
    # What Iceberg's runtime really chains: its shaded HttpClient's NoHttpResponseException.
    shaded = InSparkCatalog(ICEBERG + "RESTException", "Error occurred while processing POST request",
                            JavaThrowable("org.apache.iceberg.shaded.org.apache.hc.core5.http.NoHttpResponseException",
                                          "127.0.0.1:40833 failed to respond"), method="createNamespace")
    assert type(translate(shaded)) is CatalogUnavailableError, str(translate(shaded))
    # Without a transport failure in the chain, a 405/501 RESTException still is the catalog's refusal.
    refused = InSparkCatalog(ICEBERG + "RESTException", "Unable to process: Method Not Allowed", method="createNamespace")
    assert type(translate(refused)) is CatalogUnsupportedError


def test_a_mutation_that_may_have_been_applied_keeps_its_own_words():
    words = ("POST v1/namespaces: the catalog's answer was lost (SocketException, 5 attempt(s)) and namespace db "
             "is not there; the change may have been applied: check before repeating it")
    java = JavaThrowable(ICEBERG + "CommitStateUnknownException", "x\nCannot determine whether the commit was successful",
                         JavaThrowable("java.lang.RuntimeException", words))
    err = translate(java)
    assert isinstance(err, CommitStateUnknownError) and str(err) == words
