"""Spark action failures of ours arrive as the package's one-line errors.

`install()` hooks into PySpark's own exception capture (`pyspark.errors.exceptions.captured`), as
delta-spark does: a failure whose Java exception (or any of its causes) is one we know becomes a
`CatalogExtError` subclass, the original `Py4JJavaError` kept as `__cause__`; everything else
reaches the user exactly as PySpark raises it. `_known` is the package's one Java-error table:
expired or rejected credentials, Iceberg's commit exceptions, the shim's redirect and missing
store SDK, unsupported operations, a rename's 404, and on the shim's own methods the catalog's
refusals.

Why: docs/errors.md, section 'Errors' (Spark actions).
"""

from __future__ import annotations

import json
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
from pyspark_catalog_ext.spark.shim_api import (
    CATALOG_REDIRECT_EXCEPTION,
    CREDENTIALS_EXPIRED_EXCEPTION,
    SHIM_PACKAGE,
    SPARK_CATALOG,
    SPARK_SESSION_CATALOG,
    STORE_SDK_MISSING_EXCEPTION,
)

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
SPARK_SESSION_CATALOG_NAME = "spark_catalog"  # Spark's built-in session catalog, always there
# 400, 405/406 and 501 (Iceberg's BadRequest / RESTException / UnsupportedOperation), and Iceberg's
# own refusal of an endpoint the server did not advertise.
_UNSUPPORTED_ANSWERS = (
    "org.apache.iceberg.exceptions.BadRequestException",
    "org.apache.iceberg.exceptions.RESTException",
    "java.lang.UnsupportedOperationException",
)
# A 404 on rename (see _rename_failure): which object is missing, or no route at all.
_NOT_FOUND = (
    "org.apache.iceberg.exceptions.NoSuchTableException",
    "org.apache.iceberg.exceptions.NoSuchNamespaceException",
    "org.apache.iceberg.exceptions.NoSuchViewException",
    "org.apache.spark.sql.catalyst.analysis.NoSuchTableException",
)
_RENAMES = ("renameTable", "renameView")
# Iceberg error types that are an answer about an object; a 404 of any other type is a server
# without the route (SeaweedFS: {"type": "NotFound", "message": "Path not found"}).
_MISSING_TYPES = ("NoSuchTableException", "NoSuchNamespaceException", "NoSuchViewException")
# What servers and frameworks answer for a path they have no route for, once Iceberg made it a
# NoSuchTableException (which keeps the message, not the type): the whole message, in lower case.
_NO_ROUTE_TEXTS = ("not found", "path not found", "404 not found", "http 404 not found")

# The shim's words for a create, drop or rename whose answer was lost and whose effect the catalog does not show.
_MAY_HAVE_BEEN_APPLIED = "the change may have been applied"
# A connection that failed (refused, reset, timed out): Iceberg wraps it in a RESTException, which is no
# answer from the catalog, so never "does not support".
# Apache HttpClient 5's (NoHttpResponseException, ...) under whatever package Iceberg's runtime shades it.
_TRANSPORT_FAILURES = ("java.net.", "java.io.", "javax.net.ssl.")
_HTTP_CLIENT_FAILURES = re.compile(r"(^|\.)org\.apache\.hc\.(core5|client5)\.")

REDIRECT_EXCEPTION = CATALOG_REDIRECT_EXCEPTION
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
    if subject is None:
        renamed = _rename_failure(java_exception, chain)
        if renamed is not None:
            return renamed
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
        if _MAY_HAVE_BEEN_APPLIED in inner:  # a create, drop or rename (the shim's MutationLook): its own words
            return CommitStateUnknownError(f"{prefix}{_one_line(inner)}")
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
    if name == STORE_SDK_MISSING_EXCEPTION:
        return ConfigError(text)
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


def _error_model(name: str, message: str) -> tuple[str, str]:
    """(Iceberg error type, message) of a catalog's refusal. Where Iceberg could not parse the body
    (an error handler it does not recognise as its own) the message is the raw error model:
    {"error": {"type", "message", "code"}}; its type is read from it. Else the class's own name."""
    body = message[message.find("{"):] if "{" in message else ""  # "Unable to process: {...}" too
    try:
        error = json.loads(body).get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and error.get("code") is not None:
        return str(error.get("type") or ""), str(error.get("message") or "")
    return name.rsplit(".", 1)[-1], message


def _rename_failure(java_exception: Any, chain: list[tuple[str, str]]) -> CatalogExtError | None:
    """What a rename (renameTable/renameView) answered 404 really met. Spark resolved the source just
    before, so a missing namespace is the target's: often a target that starts with the catalog's
    name, since Spark renames within the table's catalog and reads every part of the target as
    namespace and name. None when it is no 404 (other rules apply).

    What reaches us: Iceberg's NoSuchNamespaceException with the server's words; a raw error model
    as the message where Iceberg could not parse the body; or Spark's own NoSuchTableException,
    which Iceberg's SparkCatalog throws for the source in place of the catalog's 404 (keeping neither
    its words nor its type: then we cannot tell a missing namespace from a missing route)."""
    found = next(((name, message) for name, message in chain if name in _NOT_FOUND), None)
    method = _spark_catalog_method(java_exception) if found is not None else None
    if found is None or method not in _RENAMES:
        return None
    name, message = found
    type_, message = _error_model(name, message)
    text = _one_line(message)
    kind = "view" if method == "renameView" else "table"
    if type_ == "NoSuchNamespaceException":
        namespace = _missing_namespace(message)
        first = namespace.split(".", 1)[0] if namespace and "." in namespace else None
        if first and _is_spark_catalog(first):
            return CatalogNotFoundError(
                f"the rename target is not in this catalog: it starts with the catalog name '{first}', but Spark "
                f"renames within the {kind}'s catalog and reads '{namespace}' as the target's namespace ({text}); "
                f"leave the catalog out: ALTER {kind.upper()} {first}.<namespace>.<name> RENAME TO <namespace>.<new name>",
                status=404)
        hint = (f"; if '{first}' is a catalog, leave it out: Spark renames within the {kind}'s catalog "
                "(RENAME TO <namespace>.<new name>)") if first else ""
        what = f"'{namespace}'" if namespace else "of the target"
        return CatalogNotFoundError(f"the rename failed: the namespace {what} does not exist ({text}); create it "
                                    f"first (CREATE NAMESPACE) or check the name{hint}", status=404)
    if name.startswith("org.apache.spark."):
        text = text.split(". ", 1)[0]  # Spark's first sentence; the rest is its generic advice on names
        return CatalogNotFoundError(
            f"the rename failed: the catalog answered 'not found' (HTTP 404) for a {kind} Spark had just resolved "
            f"({text}); most often the target's namespace does not exist: Spark renames within the {kind}'s catalog, "
            "so write the target without the catalog name (RENAME TO <namespace>.<new name>); else the catalog has no "
            "rename route: run `pyspark-catalog-ext doctor` to see what it supports", status=404)
    if type_ in _MISSING_TYPES and text.lower().strip(" .") not in _NO_ROUTE_TEXTS:
        return CatalogNotFoundError(f"the rename failed: the catalog says the {kind} does not exist ({text}); it was "
                                    "dropped or renamed in the meantime, or the target names a namespace that does not "
                                    "exist: check both names", status=404)
    return CatalogUnsupportedError(
        f"the catalog does not support {_OPERATIONS[method]} (it has no route for it: HTTP 404 {text}); "
        "run `pyspark-catalog-ext doctor` to see what this catalog supports", status=404)


def _missing_namespace(message: str) -> str | None:
    """The namespace in "... Namespace does not exist: a.b" (Polaris, Iceberg's catalogs) or
    "... : [a b]" (SeaweedFS), levels joined by dots; None when the message names none."""
    found = re.search(r"[Nn]amespace does not exist: (\[[^\]]*\]|\S+)", message)
    if not found:
        return None
    raw = found.group(1).strip(".'\"")
    return ".".join(raw[1:-1].split()) if raw.startswith("[") else raw


def _is_spark_catalog(name: str) -> bool:
    """Whether the active SparkSession has a catalog called `name` (False without a session)."""
    if name == SPARK_SESSION_CATALOG_NAME:
        return True
    try:
        from pyspark.sql import SparkSession

        spark = SparkSession.getActiveSession()
        return spark is not None and spark.conf.get(f"spark.sql.catalog.{name}", None) is not None
    except Exception:  # noqa: BLE001 - no session, or the JVM is gone: no claim
        return False


def _unsupported(java_exception: Any, chain: list[tuple[str, str]]) -> CatalogExtError | None:
    names = [name for name, _ in chain]
    candidates = [i for i, name in enumerate(names) if name in _UNSUPPORTED_ANSWERS + _NOT_FOUND]
    if not candidates:
        return None
    method = _spark_catalog_method(java_exception)
    if method is None:
        return None
    failure = next((i for i, (n, _) in enumerate(chain)
                    if n.startswith(_TRANSPORT_FAILURES) or _HTTP_CLIENT_FAILURES.search(n)), None)
    if failure is not None:
        name, message = chain[failure]
        return CatalogUnavailableError(
            f"{_OPERATIONS.get(method, method)} failed: the connection to the catalog failed "
            f"({name.rsplit('.', 1)[-1]}: {_one_line(message)}); check that the catalog is reachable and try again")
    index = candidates[0]
    name, message = chain[index]
    if name in _NOT_FOUND:
        return None  # a rename's 404 is _rename_failure's; elsewhere not ours
    if name == "java.lang.UnsupportedOperationException" and not _is_catalog_refusal(message):
        return None
    operation = _OPERATIONS.get(method, method)
    if name == "org.apache.iceberg.exceptions.BadRequestException" and method in _STAGE_REFUSED:
        operation = _STAGE_REFUSED[method]
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
