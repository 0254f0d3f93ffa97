"""A catalog's answer, or its silence, as one of `errors.py`'s one-line types.

`catalog_error` is the one translation of a catalog's HTTP answer; PyIceberg's own exceptions are
translated through it (their cause is the HTTP answer), so every tool reports "what is wrong, what
to check" the same way. `also_pyiceberg` keeps such an error an instance of what PyIceberg would
have raised, so code written against PyIceberg's RestCatalog keeps working.
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import pydantic_core
import requests
import urllib3.exceptions
from requests import Response

from pyspark_catalog_ext.catalog.urls import safe_url
from pyspark_catalog_ext.errors import (
    CatalogAuthError,
    CatalogConflictError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    ConfigError,
    redact,
)
from pyspark_catalog_ext.secret_keys import is_secret_param

__all__ = ["also_pyiceberg", "catalog_error", "error_parts", "error_summary", "scrubbed", "transport_cause", "transport_error"]


# -- errors that are PyIceberg's too ----------------------------------------------------------------
_BOTH: dict[tuple[type, type], type] = {}


def also_pyiceberg(ours: CatalogExtError, theirs: BaseException) -> CatalogExtError:
    """`ours`, also an instance of `type(theirs)`: what PyIceberg's RestCatalog raises for the same case,
    so code written against RestCatalog (`except OAuthError`, `except KeyError`) keeps working with
    ours swapped in. The message stays ours: one line, no secret."""
    kinds: tuple[type, type] = (type(ours), type(theirs))
    if isinstance(ours, kinds[1]):
        return ours
    with _BOTH_LOCK:
        both = _BOTH.get(kinds)
        if both is None:
            # Named as ours (what a traceback shows); str() is our one line, not KeyError's quoted repr.
            both = _BOTH[kinds] = type(kinds[0].__name__, kinds, {"__init__": _copied, "__str__": _our_line,
                                                                 "__module__": kinds[0].__module__})
    err: Any
    if isinstance(theirs, pydantic_core.ValidationError):  # built from its errors, not by __init__
        err = both.from_exception_data(theirs.title, theirs.errors())  # type: ignore[attr-defined]
    else:
        err = cast(Any, both).__new__(both)  # no __init__: the message and fields are copied from ours
    err.args = ours.args
    err.__dict__.update(ours.__dict__)
    return err


def _copied(self: BaseException, *args: Any, **kwargs: Any) -> None:
    """Instances are filled in by `also_pyiceberg` from ours, whatever the other class's constructor takes."""


def _our_line(self: BaseException) -> str:
    return str(self.args[0]) if self.args else ""


_BOTH_LOCK = threading.Lock()


# -- translation of answers -------------------------------------------------------------------------
def catalog_error(resp: Response, op: str, resource: tuple[str, str | None], where: str | None = None,
                  warehouse: str | None = None) -> CatalogError:
    """The `errors.py` exception for a non-2xx catalog answer: typed, one line, redacted."""
    status = resp.status_code
    err_type, message = error_parts(resp)
    detail = f"HTTP {status} {err_type}: {message}" if message else f"HTTP {status} {err_type}"
    where = where or safe_url(resp.url or "")
    path = urlsplit(resp.request.url or "").path if resp.request is not None else ""
    if path.endswith("/oauth/tokens") and status in (400, 401, 403):
        return CatalogAuthError(f"the catalog rejected the credentials at its token endpoint ({detail}): check "
                                "--credential (client_id:client_secret) and the scope", status=status)
    if status in (401, 419):
        return CatalogAuthError(f"catalog rejected the credentials ({detail}) for {op}: check --credential/--token",
                                status=status)
    if status == 403:
        return CatalogAuthError(f"catalog denied {op} ({detail}): the principal lacks permission; check "
                                "--credential/--token and the catalog's grants", status=status)
    if status == 404:
        method = resp.request.method if resp.request is not None else ""
        kind = resource[0] if method == "HEAD" else _not_found_kind(err_type, message, resource, resp)
        if kind == "warehouse":
            text = f"warehouse {warehouse!r} not found in catalog {where} ({detail}): check --warehouse"
        elif kind == "config":
            text = f"catalog has no endpoint {op} ({detail}): check --uri, it must be the Iceberg REST root (the URL before /v1)"
            kind = "endpoint"
        elif kind == "endpoint":
            text = f"catalog has no endpoint {op} ({detail}): the server does not implement it"
        else:
            name = resource[1] if resource[0] == kind and resource[1] else "?"
            text = f"{kind} {name!r} not found ({detail}) for {op}: check the {kind} name"
        err = CatalogNotFoundError(text, status=status)
        err.kind = kind  # type: ignore[attr-defined]
        return err
    if status in (405, 501) or (status == 400 and _no_route(err_type, message)):
        unsupported = CatalogUnsupportedError(f"catalog does not support {op} ({detail})", status=status)
        unsupported.kind = "endpoint"  # type: ignore[attr-defined]
        return unsupported
    if status == 409:
        return CatalogConflictError(f"catalog reported a conflict for {op} ({detail}): the object already exists "
                                    "or changed concurrently; reload and retry", status=status)
    if status == 429 or status >= 500:
        attempts = len(getattr(getattr(resp.raw, "retries", None), "history", ()) or ()) + 1
        return CatalogUnavailableError(
            f"catalog at {where} answered {detail} for {op} after {attempts} attempt{'s' if attempts != 1 else ''}: "
            "it is overloaded or down; try again later", status=status)
    if status == 422:
        return CatalogError(f"catalog rejected {op} ({detail}): an Idempotency-Key was reused for a different "
                            "request", status=status)
    return CatalogError(f"catalog rejected {op} ({detail})", status=status)


_CAUSE_TEXT = {"connection-refused": "connection refused", "dns": "host name does not resolve",
               "connect-timeout": "connect timed out", "read-timeout": "read timed out",
               "connection-reset": "connection reset", "connection-error": "connection error", "tls": "TLS failure"}


def transport_error(exc: requests.RequestException, op: str, where: str, *, mutation: bool) -> CatalogError:
    """A one-line error for a call that got no answer; a mutation that may have arrived says so."""
    if isinstance(exc, requests.exceptions.SSLError):
        return CatalogError(f"TLS handshake with {where} failed: the server certificate is not trusted or invalid; "
                            "pass a CA bundle (--ca-bundle / REQUESTS_CA_BUNDLE) or fix the certificate")
    if isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                        requests.exceptions.InvalidSchema)):
        return ConfigError(f"invalid catalog URL {where!r}: {type(exc).__name__}")  # type: ignore[return-value]
    cause, reached = transport_cause(exc)
    if mutation and reached:
        return CatalogUnavailableError(f"{op} may or may not have been applied by the catalog at {where} "
                                       f"({_CAUSE_TEXT.get(cause, cause)}): reconcile before repeating it")
    return CatalogUnavailableError(f"cannot reach the catalog at {where} ({_CAUSE_TEXT.get(cause, cause)}) for {op}: "
                                   "check --uri and that the catalog is running")


def transport_cause(exc: requests.RequestException) -> tuple[str, bool]:
    """(cause, may_have_reached_server) for a call that got no answer."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return "connect-timeout", False
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return "read-timeout", True
    if isinstance(exc, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)):
        return "connection-reset", True
    chain: list[BaseException] = []
    node: BaseException | None = exc
    while node is not None and len(chain) < 10:
        chain.append(node)
        if isinstance(node, urllib3.exceptions.MaxRetryError) and node.reason is not None:
            node = node.reason
        elif node.args and isinstance(node.args[0], BaseException):
            node = node.args[0]
        elif len(node.args) > 1 and isinstance(node.args[1], BaseException):
            node = node.args[1]
        else:
            node = node.__cause__ or node.__context__
    if any(isinstance(i, (urllib3.exceptions.NameResolutionError, socket.gaierror)) for i in chain):
        return "dns", False
    for item in chain:
        if isinstance(item, (urllib3.exceptions.NewConnectionError, ConnectionRefusedError)):
            return "connection-refused", False
        if isinstance(item, urllib3.exceptions.ConnectTimeoutError):
            return "connect-timeout", False
    for item in chain:
        if isinstance(item, (urllib3.exceptions.ProtocolError, http.client.RemoteDisconnected, ConnectionResetError,
                             BrokenPipeError, urllib3.exceptions.ReadTimeoutError)):
            return "connection-reset", True
    return "connection-error", True  # unknown: assume the worst for mutations


def error_parts(resp: Response) -> tuple[str, str]:
    """(type, message) from an Iceberg ErrorModel (or OAuth error) body, redacted, one line."""
    try:
        body = resp.json()
    except ValueError:
        return (resp.reason or "error").replace(" ", ""), redact(" ".join((resp.text or "").split())[:200])
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("type") or "error"), redact(" ".join(str(err.get("message") or "").split())[:300])
        if isinstance(err, str):
            return err, redact(" ".join(str(body.get("error_description") or "").split())[:300])
        if "message" in body:
            return str(body.get("type") or "error"), redact(" ".join(str(body["message"]).split())[:300])
    return (resp.reason or "error").replace(" ", ""), ""


def error_summary(resp: Response) -> str:
    err_type, message = error_parts(resp)
    return f"{err_type}: {message}" if message else err_type


def _no_route(err_type: str, message: str) -> bool:
    """Iceberg's REST servlet (its REST fixture) answers a path it has no route for with 400, not 404:
    only that exact error counts as a missing endpoint, so any other 400 stays a bad request."""
    return err_type == "BadRequestException" and message.startswith("No route for request")


def _not_found_kind(err_type: str, message: str, resource: tuple[str, str | None], resp: Response) -> str:
    t, m = err_type.lower(), message.lower()
    if resource[0] == "config":
        # /v1/config exists on every catalog: a 404 naming a warehouse/catalog means a wrong warehouse
        # (Polaris, Lakekeeper), anything else a wrong --uri.
        return "warehouse" if ("warehouse" in t or "warehouse" in m or "catalog" in m) else "config"
    if "warehouse" in t or "table bucket" in m or resource[0] == "warehouse":
        return "warehouse"
    for name in ("table", "view", "namespace"):
        if f"nosuch{name}" in t:
            return name
    if "warehouse" in m:
        return "warehouse"
    is_error_model = "json" in (resp.headers.get("Content-Type") or "")
    if not is_error_model or "path" in m or "route" in m or "endpoint" in t or t in ("notfound", "error"):
        return "endpoint"
    if "table" in m:
        return "table"
    if "namespace" in m:
        return "namespace"
    return resource[0]


def scrubbed(err: CatalogError, resp: Response, params: Mapping[str, Any] | None) -> CatalogError:
    """Servers sometimes echo what we sent ("bad token <value>"): remove every secret this request carried."""
    found = [str(v) for k, v in (params or {}).items() if v is not None and is_secret_param(k)]
    if resp.request is not None:
        for header in ("Authorization", "X-Amz-Security-Token"):
            value = resp.request.headers.get(header) or ""
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            found.append(text.split(" ", 1)[-1] if header == "Authorization" else text)
    text = str(err)
    for secret in (s for s in found if len(s) >= 4):
        text = text.replace(secret, "***")
    if text != str(err):
        err.args = (text,)
    return err
