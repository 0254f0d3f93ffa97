"""Spark action failures of ours arrive as the package's one-line errors.

`install()` hooks into PySpark's own exception capture (`pyspark.errors.exceptions.captured`), as
delta-spark does for its exceptions: every JVM call PySpark makes (`spark.sql`, `collect`,
`save`, `writeTo(...).create()`, ...) is checked, and a failure whose Java exception (or any of its
causes) is one we know becomes a `CatalogExtError` subclass, the original `Py4JJavaError` kept as
`__cause__`. Everything else reaches the user exactly as PySpark raises it.

Known failures:

* `io.catalogext.shim.CredentialsExpiredException` (storage credentials ran out and the refresh
  strategy named in the message failed) -> `CredentialRefreshError`;
* the shim's `CredentialsRejectedException` (S3 rejected a table's keys again right after a
  reactive refresh, or past `catalog-ext.refresh.reactive-max-per-minute`) ->
  `CredentialsRejectedError`, whichever package the shim keeps it in;
* Iceberg `CommitStateUnknownException` -> `CommitStateUnknownError`, `CommitFailedException` ->
  `CommitFailedError` (or `StaleTableError` when the table was replaced underneath);
* `io.catalogext.shim.CatalogRedirectException` (the catalog answered a redirect, which the shim
  never follows) -> `CatalogError`, its one line naming the target;
* an operation the catalog answers with a bare 400/404/405/501, or that Iceberg's endpoint check
  refuses (SeaweedFS has no rename and no views) -> `CatalogUnsupportedError` naming the operation;
* on the shim's own methods (staging, the Spark catalog reads of `SparkCatalogReader`,
  `translate(..., subject=...)`) also the catalog's refusals: exists, not found, denied,
  unavailable, a bad request or argument, a route it does not have.

This is the package's one Java-error table (`_known`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from pyspark_catalog_ext.errors import (
    CatalogConflictError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogRedirectError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    CredentialRefreshError,
    CredentialsRejectedError,
    StaleTableError,
    redact,
)
from pyspark_catalog_ext.spark.shim_api import CREDENTIALS_EXPIRED_EXCEPTION, SHIM_PACKAGE, SPARK_CATALOG, SPARK_SESSION_CATALOG

__all__ = ["install", "translate", "java_exception_of"]

_MAX_CAUSES = 12  # a Java cause chain is short; bounded so a cyclic chain can't loop
_MAX_FRAMES = 80  # SparkCatalog's frame sits within the first few dozen of an exception's stack
_MESSAGE_CHARS = 400

# Spark catalog methods (org.apache.iceberg.spark.SparkCatalog / SparkSessionCatalog) -> what the
# user did, for "the catalog does not support ...".
_OPERATIONS = {
    "renameTable": "renaming tables (ALTER TABLE ... RENAME TO)",
    "createView": "views (CREATE VIEW)",
    "replaceView": "views (CREATE OR REPLACE VIEW)",
    "alterView": "views (ALTER VIEW)",
    "dropView": "views (DROP VIEW)",
    "renameView": "renaming views (ALTER VIEW ... RENAME TO)",
    "listViews": "views (SHOW VIEWS)",
    "loadView": "views",
    "alterNamespace": "namespace properties (ALTER NAMESPACE ... SET PROPERTIES)",
    "createNamespace": "creating namespaces (CREATE NAMESPACE)",
    "dropNamespace": "dropping namespaces (DROP NAMESPACE)",
    "purgeTable": "purging tables (DROP TABLE ... PURGE)",
}
# A plain drop keeps the data files; a catalog that refuses it (S3 Tables) drops only with them. The
# method is dropTableWithoutPurging up to Iceberg 1.11, catalogDropTable from 1.12 on.
_PLAIN_DROP = ("dropping a table and keeping its data (DROP TABLE); where the catalog drops tables only "
               "with their data (S3 Tables), use DROP TABLE ... PURGE, which deletes the table's files")
_OPERATIONS.update({"dropTableWithoutPurging": _PLAIN_DROP, "catalogDropTable": _PLAIN_DROP})
# Glue, S3 Tables answer a stage-create with 400 (BadRequestException): stage-create itself is refused,
# so no CTAS/RTAS can be atomic there, and the way on is not atomic. (A read-only catalog's 405 on
# the same call is no such limit: it refuses every write, and keeps the generic line.)
_STAGE_REFUSED = {
    "stageCreate": "stageCreate, so a CTAS or writeTo().create() cannot be atomic here: create the table "
                   "(CREATE TABLE), then INSERT INTO it",
    "stageReplace": "stageReplace, so a REPLACE TABLE ... AS SELECT or writeTo().replace() cannot be atomic here: "
                    "empty the table (DELETE FROM), then INSERT INTO it",
    "stageCreateOrReplace": "stageCreateOrReplace, so a CREATE OR REPLACE TABLE ... AS SELECT or "
                            "writeTo().createOrReplace() cannot be atomic here: create or empty the table, then INSERT INTO it",
}
_SPARK_CATALOGS = (SPARK_CATALOG, SPARK_SESSION_CATALOG)
# 400, 405/406 and 501 (Iceberg's BadRequest / RESTException / UnsupportedOperation), and Iceberg's
# own refusal of an endpoint the server did not advertise.
_UNSUPPORTED_ANSWERS = (
    "org.apache.iceberg.exceptions.BadRequestException",
    "org.apache.iceberg.exceptions.RESTException",
    "java.lang.UnsupportedOperationException",
)
# A 404 on rename: Spark resolved the table before calling renameTable, so "not found" there means
# the catalog has no rename endpoint (or the table vanished in between, which the message says).
_NOT_FOUND = (
    "org.apache.iceberg.exceptions.NoSuchTableException",
    "org.apache.iceberg.exceptions.NoSuchViewException",
    "org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
)

REDIRECT_EXCEPTION = f"{SHIM_PACKAGE}.CatalogRedirectException"
# Matched by its simple name under the shim's package (and any sub-package the shim moves it to).
REJECTED_EXCEPTION = "CredentialsRejectedException"

_LOCK = threading.Lock()
_INSTALLED = False


def install() -> None:
    """Translate our JVM failures on every PySpark call from now on. Idempotent.

    PySpark's `install_exception_handler()` (which every new SparkSession calls) builds its
    capturing wrapper with `captured.capture_sql_exception`; we replace that factory with one that
    translates first, so our wrapper survives new sessions. Why not only `convert_exception` as
    delta-spark does: PySpark raises the converted error `from None`, which would drop the
    original that we keep as `__cause__`.
    """
    global _INSTALLED
    from pyspark.errors.exceptions import captured

    with _LOCK:
        if not _INSTALLED:
            pyspark_capture = captured.capture_sql_exception

            def capture(f: Callable[..., Any]) -> Callable[..., Any]:
                return pyspark_capture(_translating(f))

            captured.capture_sql_exception = capture
            _INSTALLED = True
        captured.install_exception_handler()


def _translating(get_return_value: Callable[..., Any]) -> Callable[..., Any]:
    from py4j.protocol import Py4JJavaError

    def translated(*args: Any, **kwargs: Any) -> Any:
        try:
            return get_return_value(*args, **kwargs)
        except Py4JJavaError as exc:
            # get_return_value(answer, gateway_client, target_id, name): calls on our own shim
            # classes ("z:io.catalogext...") are translated by their Python callers (staging).
            target = str(args[2] if len(args) > 2 else kwargs.get("target_id") or "")
            if target.startswith(f"z:{SHIM_PACKAGE}."):
                raise
            ours = translate(exc.java_exception)
            if ours is None:
                raise
            raise ours from exc

    return translated


def translate(java_exception: Any, subject: str | None = None) -> CatalogExtError | None:
    """The package error for a Py4J Java exception object, or None if it is not one of ours.

    `subject` ("commit db.t") is given by the callers of the shim's own methods (staging), whose
    Py4JJavaError nobody else translates: for them the catalog's plain refusals (exists, not found,
    denied, unavailable, a bad argument) become package errors too. On any other PySpark call
    those stay PySpark's own errors.
    """
    try:
        chain = java_chain(java_exception)
    except Exception:  # noqa: BLE001 - the JVM may be gone; then PySpark's error stands
        return None
    for name, message in chain:
        known = _known(name, message, chain, subject)
        if known is not None:
            return known
    # Task failures can arrive without a deserialized cause: the class name is then in the text.
    rejected = re.search(rf"{re.escape(SHIM_PACKAGE)}(?:\.\w+)*\.{REJECTED_EXCEPTION}: ([^\n]*)", chain[0][1]) if chain else None
    if rejected:
        return CredentialsRejectedError(_one_line(rejected.group(1)))
    if chain and f"{CREDENTIALS_EXPIRED_EXCEPTION}: " in chain[0][1]:
        detail = chain[0][1].split(f"{CREDENTIALS_EXPIRED_EXCEPTION}: ", 1)[1]
        return CredentialRefreshError(_one_line(detail.split("\n", 1)[0]))
    return _unsupported(java_exception, chain)


def _known(name: str, message: str, chain: list[tuple[str, str]], subject: str | None) -> CatalogExtError | None:
    """The one Java-exception translation table: one link of the cause chain -> a package error."""
    short = name.rsplit(".", 1)[-1]
    text = _one_line(message)
    prefix = f"{subject}: " if subject else ""
    if short == REJECTED_EXCEPTION and name.startswith(f"{SHIM_PACKAGE}."):
        return CredentialsRejectedError(text)
    if name == CREDENTIALS_EXPIRED_EXCEPTION:
        return CredentialRefreshError(text)
    if short == "CommitStateUnknownException":
        # Iceberg appends a paragraph to its cause's message: the cause says what happened.
        inner = next((m for c, m in chain if c != name and m), message)
        return CommitStateUnknownError(
            f"{prefix}commit state unknown ({_one_line(inner)}); nothing was deleted: load the table to see "
            "whether the commit landed before retrying")
    if short == "CommitFailedException":
        if "replaced by another table" in message:
            return StaleTableError(f"{prefix}the table was replaced underneath: {text}; reload it and try again")
        return CommitFailedError(f"{prefix}the catalog rejected the commit ({text}); nothing was published: "
                                 "the table changed or exists already; reload and try again")
    if name == REDIRECT_EXCEPTION:  # the same error as the Python client's for a 3xx
        return CatalogRedirectError(f"{prefix}{text}", status=_redirect_status(message))
    if subject is None:
        return None  # below: only for calls on the shim's own methods
    failed = f"{subject} failed"
    if short in ("AlreadyExistsException", "TableAlreadyExistsException"):
        return CatalogConflictError(f"{failed}: the table already exists; use stage_replace() to replace it",
                                    status=409)
    if short in ("NoSuchTableException", "NoSuchNamespaceException"):
        kind = "namespace" if "Namespace" in short else "table"
        return CatalogNotFoundError(f"{failed}: {kind} not found ({text}); check the name", status=404)
    if short in ("ForbiddenException", "NotAuthorizedException"):
        return CatalogError(f"{failed}: the catalog denied it ({text}); check the credentials", status=403)
    if short in ("ServiceFailureException", "ServiceUnavailableException"):
        return CatalogUnavailableError(f"{failed}: the catalog is unavailable ({text}); try again later")
    if short == "UnsupportedOperationException" and name.startswith("java.") and _is_catalog_refusal(message):
        return CatalogUnsupportedError(f"{failed}: the catalog does not support it ({text})",
                                       status=_http_status(message))
    if short == "BadRequestException" and "No route for request" in message:  # Iceberg's REST servlet: no such route
        return CatalogUnsupportedError(f"{failed}: the catalog does not support it ({text})", status=400)
    if short == "BadRequestException":
        return CatalogError(f"{failed}: the catalog rejected the request ({text})", status=400)
    if short == "RESTException":
        return CatalogError(f"{failed}: {text}", status=_http_status(message))
    if short == "IllegalArgumentException" and name.startswith("java."):
        return ConfigError(f"{failed}: {text}")
    if short == "IllegalStateException" and "staged table" in message:
        return ConfigError(text)
    return None


def _unsupported(java_exception: Any, chain: list[tuple[str, str]]) -> CatalogExtError | None:
    names = [name for name, _ in chain]
    candidates = [i for i, name in enumerate(names) if name in _UNSUPPORTED_ANSWERS + _NOT_FOUND]
    if not candidates:
        return None
    method = _spark_catalog_method(java_exception)
    if method is None:
        return None
    index = candidates[0]
    name, message = chain[index]
    if name in _NOT_FOUND and method not in ("renameTable", "renameView"):
        return None
    if name == "java.lang.UnsupportedOperationException" and not _is_catalog_refusal(message):
        return None
    operation = _OPERATIONS.get(method, method)
    if name == "org.apache.iceberg.exceptions.BadRequestException" and method in _STAGE_REFUSED:
        operation = _STAGE_REFUSED[method]
    if name in _NOT_FOUND:
        evidence = "it answered 'not found' (HTTP 404) for a table Spark had just loaded"
    else:
        evidence = f"{name.rsplit('.', 1)[-1]}: {_one_line(message)}"
    return CatalogUnsupportedError(
        f"the catalog does not support {operation} ({evidence}); "
        "run `pyspark-catalog-ext doctor` to see what this catalog supports")


def _is_catalog_refusal(message: str) -> bool:
    # Iceberg's Endpoint.check ("Server does not support endpoint: ...") and a 501 answer
    # ("Not implemented: ..."); other UnsupportedOperationExceptions are Spark's or Iceberg's own.
    return message.startswith(("Server does not support endpoint", "Not implemented"))


def _http_status(message: str) -> int | None:
    """The status in "(HTTP 404 ..." of the shim's raw-GET refusals (CatalogReads.ReadErrors writes
    it; Iceberg's exceptions carry no status field to read), 501 for Iceberg's "Not implemented"."""
    found = re.search(r"\(HTTP (\d{3}) ", message)
    if found:
        return int(found.group(1))
    return 501 if message.startswith("Not implemented") else None


def _redirect_status(message: str) -> int | None:
    """The 3xx in "... with HTTP 307, a redirect to ..." (CatalogRedirectException's message)."""
    found = re.search(r" with HTTP (3\d\d), a redirect", message)
    return int(found.group(1)) if found else None


def java_exception_of(exc: BaseException) -> Any:
    """The Py4J Java exception object behind `exc`, or None: a `Py4JJavaError` keeps it as
    `java_exception`; an error PySpark already converted (e.g. its `UnsupportedOperationException`)
    keeps it as `_origin` (pyspark.errors.exceptions.captured.CapturedException, no public name)."""
    return getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)


def java_chain(java_exception: Any) -> list[tuple[str, str]]:
    """(class name, message) of a Py4J Java exception object and its causes, outermost first."""
    out: list[tuple[str, str]] = []
    current = java_exception
    while current is not None and len(out) < _MAX_CAUSES:
        out.append((str(current.getClass().getName()), str(current.getMessage() or "")))
        cause = current.getCause()
        if cause is None or cause.equals(current):
            break
        current = cause
    return out


def _spark_catalog_method(java_exception: Any) -> str | None:
    """The SparkCatalog method on the stack of the exception or its causes, e.g. 'renameTable'."""
    current = java_exception
    for _ in range(_MAX_CAUSES):
        if current is None:
            return None
        frames = current.getStackTrace()
        for i in range(min(len(frames), _MAX_FRAMES)):
            frame = frames[i]
            if str(frame.getClassName()) in _SPARK_CATALOGS:
                return str(frame.getMethodName())
        current = current.getCause()
    return None


def _one_line(text: str) -> str:
    return redact(" ".join(str(text).split()))[:_MESSAGE_CHARS]
