"""A small, dependable Iceberg REST catalog client.

Used by the credential refresh sources, the staged-table helpers and the doctor probes, so it
cares about three things more than coverage of the spec:

* **Errors that explain themselves.** Every failure becomes one of the exceptions in
  `errors.py`, one line, saying what is wrong and what to check, with the server's own error
  type and (redacted) message. No tokens, keys or secrets; URIs without userinfo.
* **Safe retries.** Reads are retried on connection errors, timeouts, 429 and 502/503/504.
  Mutations carry an `Idempotency-Key` (UUIDv7, same key for every retry of one logical
  operation) when the server advertises `idempotency-key-lifetime`. Without that support a
  mutation that may have reached the server is *not* retried blindly:
  `AmbiguousMutationError` is raised so the caller can reconcile.
* **Evidence.** Every HTTP exchange is recorded (`Exchange`: operation, method, path without
  secrets, status, elapsed ms, attempt, key) in `exchanges` / `last_exchange` and passed to
  an optional `on_exchange` callback.

One client may be shared by several threads: it uses one pooled `requests.Session`, config is
loaded once under a lock, and per-call state lives on the stack or in thread-locals.
"""

from __future__ import annotations

import collections
import http.client
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests
import requests.adapters
import urllib3.exceptions

from pyspark_catalog_ext.catalog.rest_auth import CatalogAuth, NoAuth, _safe_url
from pyspark_catalog_ext.catalog.retry import (
    RETRYABLE_STATUSES,
    SAFE_RETRY_STATUSES,
    RetryPolicy,
    parse_iso8601_duration,
    parse_retry_after,
    uuid7,
)
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

__all__ = [
    "CatalogClient",
    "Exchange",
    "TableIdentifier",
    "AmbiguousMutationError",
    "encode_namespace",
    "namespace_levels",
    "uuid7",
]

log = logging.getLogger(__name__)

Namespace = str | Sequence[str]
ACCESS_DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
IDEMPOTENCY_HEADER = "Idempotency-Key"
_USER_AGENT = "pyspark-catalog-ext"
# Query parameters whose values never go into evidence, logs or messages.
# Query parameters are camelCase (storageRefreshToken, X-Amz-Signature), so a substring test,
# broader than secret_keys.is_secret_key's word-after-separator rule for conf keys.
_SECRET_PARAMS = ("token", "secret", "credential", "signature", "password", "key")


class AmbiguousMutationError(CatalogUnavailableError):
    """A mutation may or may not have been applied, and retrying it blindly is unsafe.

    Raised when a request that changes state may have reached the server (read timeout,
    connection reset after sending, 502/504, 500) and either the server has no idempotency
    support, or retries ran out. The caller should reconcile (e.g. load the table and check
    its UUID / snapshot summary) or, when `idempotency_key` is set, repeat the same operation
    with that same key.
    """

    def __init__(
        self,
        message: str,
        *,
        operation: str,
        method: str,
        path: str,
        idempotency_key: str | None = None,
        status: int | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message, status=status)
        self.operation = operation
        self.method = method
        self.path = path
        self.idempotency_key = idempotency_key
        self.cause = cause


@dataclass(frozen=True)
class Exchange:
    """Evidence of one HTTP attempt. Contains no secrets (query secrets are masked)."""

    operation: str
    method: str
    path: str
    status: int | None
    elapsed_ms: float
    attempt: int
    error: str | None = None
    idempotency_key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "attempt": self.attempt,
            "error": self.error,
            "idempotency_key": self.idempotency_key,
        }


class TableIdentifier(NamedTuple):
    namespace: tuple[str, ...]
    name: str


def namespace_levels(ns: Namespace) -> tuple[str, ...]:
    """Namespace levels from "a.b", "a" or ("a", "b")."""
    levels = tuple(ns.split(".")) if isinstance(ns, str) else tuple(ns)
    if not levels or any(not isinstance(level, str) or not level for level in levels):
        raise ConfigError(f"invalid namespace {ns!r}: use 'db', 'a.b' or a tuple of non-empty names")
    return levels


def encode_namespace(ns: Namespace) -> str:
    """Encode a namespace for a URL path: levels URL-quoted and joined by %1F (the spec)."""
    return "%1F".join(quote(level, safe="") for level in namespace_levels(ns))


def _ident(ns: Namespace, name: str) -> dict[str, Any]:
    return {"namespace": list(namespace_levels(ns)), "name": name}


def _dotted(ns: Namespace, table: str | None = None) -> str:
    text = ".".join(namespace_levels(ns))
    return f"{text}.{table}" if table is not None else text


def _mask_params(params: Mapping[str, Any] | None) -> str:
    if not params:
        return ""
    items = []
    for key, value in params.items():
        if value is None:
            continue
        if any(word in key.lower() for word in _SECRET_PARAMS):
            value = "***"
        items.append((key, value))
    return ("?" + urlencode(items)) if items else ""


class _Outcome(NamedTuple):
    response: requests.Response
    attempts: int
    elapsed: float


class CatalogClient:
    """Iceberg REST catalog client.

    Args:
        uri: catalog root, e.g. ``http://127.0.0.1:8181`` (paths are ``<uri>/v1/...``).
        warehouse: sent as ``?warehouse=`` to ``/v1/config``; selects the catalog/prefix.
        auth: a `CatalogAuth` (see `catalog_auth.auth_from_conf`); default no auth.
        headers: extra headers sent on every request (e.g. Iceberg ``header.*`` props).
        timeout: requests timeout, seconds or (connect, read).
        retry: the `RetryPolicy`; its clock and sleep are used for all waiting.
        access_delegation: value of ``X-Iceberg-Access-Delegation`` on table load/create
            (None to omit).
        idempotency: None = send Idempotency-Key only when the server advertises
            ``idempotency-key-lifetime``; True = always on mutations; False = never.
        verify: TLS verification, True/False or a CA bundle path.
        on_exchange: optional callback receiving each `Exchange`.
        pool_maxsize: connections kept per host (size it to the number of threads).
    """

    def __init__(
        self,
        uri: str,
        warehouse: str | None = None,
        auth: CatalogAuth | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | tuple[float, float] = (5.0, 30.0),
        retry: RetryPolicy | None = None,
        access_delegation: str | None = "vended-credentials",
        *,
        idempotency: bool | None = None,
        verify: bool | str = True,
        on_exchange: Callable[[Exchange], None] | None = None,
        pool_maxsize: int = 16,
        history: int = 256,
    ) -> None:
        parts = urlsplit(uri or "")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"invalid catalog URI {_safe_url(uri or '')!r}: expected http(s)://host[:port][/path]")
        self.uri = uri.rstrip("/")
        self.safe_uri = _safe_url(self.uri)
        self.warehouse = warehouse
        self.auth: CatalogAuth = auth if auth is not None else NoAuth()
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self.access_delegation = access_delegation
        self.idempotency = idempotency
        self.verify = verify
        self.on_exchange = on_exchange
        self.exchanges: collections.deque[Exchange] = collections.deque(maxlen=history)
        self.last_exchange: Exchange | None = None

        self._session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update({"Accept": "application/json", "User-Agent": _USER_AGENT})
        self._custom_headers = tuple(dict(headers or {}))  # names of the user's `header.*` properties
        if headers:
            self._session.headers.update(dict(headers))

        self._config_lock = threading.Lock()
        self._ensure_lock = threading.Lock()
        self._config_loaded = False
        self._tls = threading.local()
        #: Merged config properties (defaults, then overrides).
        self.properties: dict[str, str] = {}
        self.defaults: dict[str, str] = {}
        self.overrides: dict[str, str] = {}
        self.prefix: str | None = None
        #: Endpoints advertised by the server ("GET /v1/{prefix}/namespaces", ...), None if not advertised.
        self.endpoints: list[str] | None = None
        self.idempotency_key_lifetime: str | None = None
        self.idempotency_key_lifetime_seconds: float | None = None

        self.auth.bind(self.uri, self._auth_transport)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def from_properties(cls, props: Mapping[str, str], **kwargs: Any) -> CatalogClient:
        """A client for the catalog that Iceberg properties describe (`uri`, `warehouse`, auth
        properties, `header.*`), i.e. the catalog a Spark catalog of the same properties talks to."""
        from pyspark_catalog_ext.catalog.rest_auth import auth_from_conf

        uri = props.get("uri")
        if not uri:
            raise ConfigError("the catalog properties have no uri: set spark.sql.catalog.<name>.uri (or --uri)")
        headers = {k[len("header."):]: v for k, v in props.items()
                   if k.startswith("header.") and k[len("header."):] != ACCESS_DELEGATION_HEADER}
        kwargs.setdefault("access_delegation", props.get("header." + ACCESS_DELEGATION_HEADER))
        return cls(uri, warehouse=props.get("warehouse"), auth=auth_from_conf(props), headers=headers, **kwargs)

    def close(self) -> None:
        """Close pooled connections."""
        self._session.close()

    def __enter__(self) -> CatalogClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CatalogClient(uri={self.safe_uri!r}, warehouse={self.warehouse!r}, auth={self.auth!r})"

    # ------------------------------------------------------------------ config
    def config(self) -> dict[str, Any]:
        """GET /v1/config: merge defaults/overrides, derive `prefix`, record endpoints and
        `idempotency-key-lifetime`. Returns the raw (validated) response. Always refetches.

        A `uri` override from the server is recorded in `properties` but not followed: a
        config response must not be able to redirect our credentials to another host."""
        params = {"warehouse": self.warehouse} if self.warehouse else None
        op = "GET /v1/config"
        body = self._call("GET", "/v1/config", params=params, operation="config", resource=("config", None))
        if not isinstance(body, dict):
            raise CatalogError(f"catalog returned malformed JSON for {op}: expected an object")
        defaults = body.get("defaults")
        overrides = body.get("overrides")
        defaults = {} if defaults is None else defaults
        overrides = {} if overrides is None else overrides
        if not isinstance(defaults, dict) or not isinstance(overrides, dict):
            raise CatalogError(f"catalog returned malformed JSON for {op}: defaults/overrides must be objects")
        endpoints = body.get("endpoints")
        if endpoints is not None and (
            not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints)
        ):
            raise CatalogError(f"catalog returned malformed JSON for {op}: endpoints must be a list of strings")
        lifetime = body.get("idempotency-key-lifetime")
        if lifetime is None:  # tolerate servers that put it among the properties
            lifetime = overrides.get("idempotency-key-lifetime", defaults.get("idempotency-key-lifetime"))
        merged = {str(k): str(v) for k, v in defaults.items()}
        merged.update({str(k): str(v) for k, v in overrides.items()})
        with self._config_lock:
            self.defaults = {str(k): str(v) for k, v in defaults.items()}
            self.overrides = {str(k): str(v) for k, v in overrides.items()}
            self.properties = merged
            self.prefix = merged.get("prefix") or None
            if self.prefix:
                self.prefix = self.prefix.strip("/")
            self.endpoints = list(endpoints) if endpoints is not None else None
            self.idempotency_key_lifetime = str(lifetime) if lifetime else None
            self.idempotency_key_lifetime_seconds = None
            if self.idempotency_key_lifetime:
                try:
                    self.idempotency_key_lifetime_seconds = parse_iso8601_duration(self.idempotency_key_lifetime)
                except ValueError:
                    log.warning("catalog advertised an unparseable idempotency-key-lifetime %r",
                                self.idempotency_key_lifetime)
            self._config_loaded = True
        return body

    def ensure_config(self) -> None:
        """Load /v1/config once (thread-safe)."""
        if self._config_loaded:
            return
        # A separate lock from _config_lock: config() takes that one for its state update.
        with self._ensure_lock:
            if not self._config_loaded:
                self.config()

    @property
    def idempotency_enabled(self) -> bool:
        """True when mutations will carry an Idempotency-Key."""
        if self.idempotency is not None:
            return self.idempotency
        return self.idempotency_key_lifetime is not None

    def supports_endpoint(self, endpoint: str) -> bool | None:
        """Whether the server advertised `endpoint` ("GET /v1/{prefix}/namespaces/...");
        None when it advertised no endpoint list at all (then: try it and see)."""
        self.ensure_config()
        if self.endpoints is None:
            return None
        return " ".join(endpoint.split()) in {" ".join(e.split()) for e in self.endpoints}

    @property
    def last_idempotency_key(self) -> str | None:
        """Idempotency-Key sent by the last mutation *of the calling thread* (None if none)."""
        return getattr(self._tls, "last_idempotency_key", None)

    # ------------------------------------------------------------------ paths
    def _p(self, tail: str) -> str:
        """Path under the prefix: /v1/{prefix}/<tail>."""
        self.ensure_config()
        return f"/v1/{self.prefix}/{tail}" if self.prefix else f"/v1/{tail}"

    def _ns_path(self, ns: Namespace) -> str:
        return self._p(f"namespaces/{encode_namespace(ns)}")

    def _table_path(self, ns: Namespace, table: str) -> str:
        if not table:
            raise ConfigError("empty table name")
        return f"{self._ns_path(ns)}/tables/{quote(table, safe='')}"

    # ------------------------------------------------------------------ namespaces
    def list_namespaces(self, parent: Namespace | None = None) -> list[tuple[str, ...]]:
        """All namespaces (under `parent` if given), following pagination."""
        params: dict[str, Any] = {}
        if parent is not None:
            params["parent"] = "\x1f".join(namespace_levels(parent))
        out: list[tuple[str, ...]] = []
        for page in self._pages("GET", self._p("namespaces"), params, "list_namespaces",
                                ("warehouse", self.warehouse) if parent is None else ("namespace", _dotted(parent)),
                                "namespaces"):
            for ns in page:
                if not isinstance(ns, list) or not all(isinstance(x, str) for x in ns):
                    raise CatalogError(f"catalog returned malformed JSON for GET {self._p('namespaces')}: "
                                       "namespaces must be lists of strings")
                out.append(tuple(ns))
        return out

    def create_namespace(self, ns: Namespace, properties: Mapping[str, str] | None = None,
                         *, idempotency_key: str | None = None) -> dict[str, Any]:
        """POST /namespaces. 409 (exists) raises CatalogConflictError."""
        body = {"namespace": list(namespace_levels(ns)), "properties": dict(properties or {})}
        return self._call_dict("POST", self._p("namespaces"), json=body, operation="create_namespace",
                               resource=("namespace", _dotted(ns)), mutation=True, idempotency_key=idempotency_key)

    def load_namespace(self, ns: Namespace) -> dict[str, Any]:
        """GET /namespaces/{ns}: {"namespace": [...], "properties": {...}}."""
        return self._call_dict("GET", self._ns_path(ns), operation="load_namespace",
                               resource=("namespace", _dotted(ns)), required=("namespace",))

    def namespace_exists(self, ns: Namespace) -> bool:
        """HEAD /namespaces/{ns}."""
        return self._exists(self._ns_path(ns), "namespace_exists", ("namespace", _dotted(ns)))

    def drop_namespace(self, ns: Namespace, *, idempotency_key: str | None = None) -> None:
        """DELETE /namespaces/{ns}."""
        self._call("DELETE", self._ns_path(ns), operation="drop_namespace",
                   resource=("namespace", _dotted(ns)), mutation=True, idempotency_key=idempotency_key)

    # ------------------------------------------------------------------ tables
    def list_tables(self, ns: Namespace) -> list[TableIdentifier]:
        """Tables in a namespace, following pagination."""
        path = f"{self._ns_path(ns)}/tables"
        out: list[TableIdentifier] = []
        for page in self._pages("GET", path, {}, "list_tables", ("namespace", _dotted(ns)), "identifiers"):
            for ident in page:
                if (not isinstance(ident, dict) or not isinstance(ident.get("name"), str)
                        or not isinstance(ident.get("namespace"), list)):
                    raise CatalogError(f"catalog returned malformed JSON for GET {path}: bad table identifier")
                out.append(TableIdentifier(tuple(ident["namespace"]), ident["name"]))
        return out

    def load_table(self, ns: Namespace, table: str, snapshots: str | None = None) -> dict[str, Any]:
        """GET /tables/{t} (LoadTableResult: metadata-location, metadata, config, storage-credentials).

        `snapshots` is "all" or "refs"."""
        params = {"snapshots": snapshots} if snapshots else None
        body = self._call_dict("GET", self._table_path(ns, table), params=params, operation="load_table",
                               resource=("table", _dotted(ns, table)), delegation=True)
        return self._check_load_result(body, f"GET {self._table_path(ns, table)}")

    def table_exists(self, ns: Namespace, table: str) -> bool:
        """HEAD /tables/{t}: True/False; other errors raise."""
        return self._exists(self._table_path(ns, table), "table_exists", ("table", _dotted(ns, table)))

    def create_table(self, ns: Namespace, body: Mapping[str, Any], stage_create: bool = False,
                     *, idempotency_key: str | None = None) -> dict[str, Any]:
        """POST /namespaces/{ns}/tables with a CreateTableRequest `body` (name, schema, ...).

        With `stage_create=True` the table stays invisible until a commit with `assert-create`.
        Returns the LoadTableResult (including vended `storage-credentials` if any)."""
        if not isinstance(body, Mapping) or not body.get("name") or "schema" not in body:
            raise ConfigError("create_table body needs at least 'name' and 'schema'")
        payload = dict(body)
        if stage_create:
            payload["stage-create"] = True
        path = f"{self._ns_path(ns)}/tables"
        result = self._call_dict("POST", path, json=payload, operation="stage_create" if stage_create else "create_table",
                                 resource=("namespace", _dotted(ns)), mutation=True,
                                 idempotency_key=idempotency_key, delegation=True)
        return self._check_load_result(result, f"POST {path}")

    def commit_table(self, ns: Namespace, table: str, requirements: Sequence[Mapping[str, Any]],
                     updates: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
                     ) -> dict[str, Any]:
        """POST /tables/{t} (CommitTableRequest). Returns {"metadata-location", "metadata"}.
        A failed requirement (409) raises CatalogConflictError."""
        payload = {"identifier": _ident(ns, table), "requirements": list(requirements), "updates": list(updates)}
        return self._call_dict("POST", self._table_path(ns, table), json=payload, operation="commit_table",
                               resource=("table", _dotted(ns, table)), mutation=True,
                               idempotency_key=idempotency_key, required=("metadata-location", "metadata"))

    def commit_transaction(self, table_changes: Sequence[Mapping[str, Any]],
                           *, idempotency_key: str | None = None) -> None:
        """POST /transactions/commit with {"table-changes": [...]} (each: identifier, requirements, updates)."""
        self._call("POST", self._p("transactions/commit"), json={"table-changes": list(table_changes)},
                   operation="commit_transaction", resource=("endpoint", None), mutation=True,
                   idempotency_key=idempotency_key)

    def drop_table(self, ns: Namespace, table: str, purge: bool = False,
                   *, idempotency_key: str | None = None) -> None:
        """DELETE /tables/{t}[?purgeRequested=true]."""
        params = {"purgeRequested": "true"} if purge else None
        self._call("DELETE", self._table_path(ns, table), params=params, operation="drop_table",
                   resource=("table", _dotted(ns, table)), mutation=True, idempotency_key=idempotency_key)

    def rename_table(self, src_ns: Namespace, src: str, dst_ns: Namespace, dst: str,
                     *, idempotency_key: str | None = None) -> None:
        """POST /tables/rename."""
        payload = {"source": _ident(src_ns, src), "destination": _ident(dst_ns, dst)}
        self._call("POST", self._p("tables/rename"), json=payload, operation="rename_table",
                   resource=("table", _dotted(src_ns, src)), mutation=True, idempotency_key=idempotency_key)

    def register_table(self, ns: Namespace, name: str, metadata_location: str, overwrite: bool = False,
                       *, idempotency_key: str | None = None) -> dict[str, Any]:
        """POST /namespaces/{ns}/register: adopt an existing metadata file."""
        payload: dict[str, Any] = {"name": name, "metadata-location": metadata_location}
        if overwrite:
            payload["overwrite"] = True
        path = f"{self._ns_path(ns)}/register"
        result = self._call_dict("POST", path, json=payload, operation="register_table",
                                 resource=("namespace", _dotted(ns)), mutation=True,
                                 idempotency_key=idempotency_key, delegation=True)
        return self._check_load_result(result, f"POST {path}")

    def load_credentials(self, ns: Namespace, table: str, storage_refresh_token: str | None = None,
                         plan_id: str | None = None) -> dict[str, Any]:
        """GET /tables/{t}/credentials[?storageRefreshToken=...|planId=...].

        Returns {"storage-credentials": [{"prefix", "config"}, ...]}. A server without the
        endpoint raises CatalogNotFoundError with kind "endpoint". Both arguments are passed
        through as given (the server answers 400 when both are set)."""
        params = {"storageRefreshToken": storage_refresh_token, "planId": plan_id}
        params = {k: v for k, v in params.items() if v is not None}
        path = f"{self._table_path(ns, table)}/credentials"
        body = self._call_dict("GET", path, params=params or None, operation="load_credentials",
                               resource=("table", _dotted(ns, table)))
        self._check_storage_credentials(body, f"GET {path}", required=True)
        return body

    # ------------------------------------------------------------------ generic
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json: Any = None, headers: Mapping[str, str] | None = None,
                mutation: bool | None = None, idempotency_key: str | None = None,
                operation: str | None = None) -> Any:
        """Any catalog call. `path` is relative to the catalog URI; "{prefix}" is substituted
        (e.g. "/v1/{prefix}/namespaces"). Mutation defaults to POST/PUT/DELETE/PATCH.
        Returns parsed JSON, or None for an empty body."""
        method = method.upper()
        if "{prefix}" in path:
            self.ensure_config()
            path = path.replace("/{prefix}", f"/{self.prefix}" if self.prefix else "")
        if not path.startswith("/"):
            path = "/" + path
        if mutation is None:
            mutation = method in ("POST", "PUT", "DELETE", "PATCH")
        return self._call(method, path, params=params, json=json, headers=headers,
                          operation=operation or f"{method} {path}", resource=("endpoint", None),
                          mutation=mutation, idempotency_key=idempotency_key)

    def get_url(self, url: str, params: Mapping[str, Any] | None = None,
                *, allow_cross_origin_auth: bool = False) -> Any:
        """GET a server-given URL (e.g. `client.refresh-credentials-endpoint`), absolute or
        relative to the catalog URI. Credentials and the user's custom headers (`header.*`, an
        API key say) are only sent to the catalog's own origin unless `allow_cross_origin_auth`
        is set: a config value must not be able to exfiltrate them."""
        full = urljoin(self.uri + "/", url)
        target, base = urlsplit(full), urlsplit(self.uri)
        same_origin = (target.scheme, target.hostname, target.port) == (base.scheme, base.hostname, base.port)
        if target.scheme not in ("http", "https"):
            raise ConfigError(f"refusing non-http URL {_safe_url(full)!r}")
        trusted = same_origin or allow_cross_origin_auth
        # A None value removes a session header from this one request (requests' merge rule).
        strip: dict[str, Any] = {} if trusted else dict.fromkeys(self._custom_headers)
        return self._call("GET", full, params=params, headers=strip, operation="get_url", resource=("endpoint", None),
                          absolute=True, authenticate=trusted)

    # ------------------------------------------------------------------ internals: shapes
    def _check_load_result(self, body: dict[str, Any], op: str) -> dict[str, Any]:
        if not isinstance(body.get("metadata"), dict):
            raise CatalogError(f"catalog returned malformed JSON for {op}: no table metadata object")
        if body.get("config") is not None and not isinstance(body["config"], dict):
            raise CatalogError(f"catalog returned malformed JSON for {op}: config must be an object")
        self._check_storage_credentials(body, op, required=False)
        return body

    @staticmethod
    def _check_storage_credentials(body: dict[str, Any], op: str, required: bool) -> None:
        creds = body.get("storage-credentials")
        if creds is None and not required:
            return
        if not isinstance(creds, list) or not all(
            isinstance(c, dict) and isinstance(c.get("prefix"), str) and isinstance(c.get("config"), dict)
            for c in creds
        ):
            raise CatalogError(f"catalog returned malformed JSON for {op}: "
                               "storage-credentials must be a list of {prefix, config}")

    def _pages(self, method: str, path: str, params: dict[str, Any], operation: str,
               resource: tuple[str, str | None], key: str) -> Iterable[list[Any]]:
        token: str | None = None
        seen: set[str] = set()
        while True:
            query = dict(params)
            if token:
                query["pageToken"] = token
            body = self._call_dict(method, path, params=query or None, operation=operation, resource=resource)
            items = body.get(key)
            if not isinstance(items, list):
                raise CatalogError(f"catalog returned malformed JSON for {method} {path}: no '{key}' list")
            yield items
            token = body.get("next-page-token")
            if not token:
                return
            if token in seen:  # a server bug must not spin us forever
                raise CatalogError(f"catalog returned a repeating next-page-token for {method} {path}")
            seen.add(token)

    def _exists(self, path: str, operation: str, resource: tuple[str, str | None]) -> bool:
        # HEAD has no body, so a 404 can't say what is missing; it means "does not exist".
        try:
            self._call("HEAD", path, operation=operation, resource=resource, expect_json=False)
            return True
        except CatalogUnsupportedError:
            raise
        except CatalogNotFoundError:
            return False

    # ------------------------------------------------------------------ internals: calls
    def _call_dict(self, method: str, path: str, *, required: Sequence[str] = (), **kw: Any) -> dict[str, Any]:
        body = self._call(method, path, **kw)
        op = f"{method} {path}"
        if not isinstance(body, dict):
            raise CatalogError(f"catalog returned malformed JSON for {op}: expected an object")
        missing = [k for k in required if k not in body]
        if missing:
            raise CatalogError(f"catalog returned malformed JSON for {op}: missing {', '.join(missing)}")
        return body

    def _call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
              headers: Mapping[str, str] | None = None, operation: str,
              resource: tuple[str, str | None], mutation: bool = False,
              idempotency_key: str | None = None, delegation: bool = False, expect_json: bool = True,
              absolute: bool = False, authenticate: bool = True) -> Any:
        url = path if absolute else self.uri + path
        shown = urlsplit(url).path  # messages: path only, never the query
        hdrs = dict(headers or {})
        if delegation and self.access_delegation:
            hdrs[ACCESS_DELEGATION_HEADER] = self.access_delegation
        outcome = self._exchange(method, url, shown, params=params, json=json, headers=hdrs,
                                 operation=operation, mutation=mutation, idempotency_key=idempotency_key,
                                 authenticate=authenticate)
        resp = outcome.response
        if resp.status_code >= 400:
            try:
                self._raise_for(resp, method, shown, resource, outcome)
            except CatalogError as err:
                # Servers sometimes echo what we sent ("bad token <value>"): scrub every secret
                # this request carried, whatever shape the echo takes.
                _scrub_exception(err, _request_secrets(resp.request, params))
                raise
        if not expect_json or method == "HEAD" or resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError as exc:
            snippet = " ".join(resp.text[:60].split())
            raise CatalogError(
                f"catalog returned malformed JSON for {method} {shown}: {exc} (body starts {snippet!r}); "
                "check that --uri points at the Iceberg REST endpoint",
                status=resp.status_code,
            ) from None

    def _auth_transport(self, method: str, url: str, *, data: Mapping[str, str], operation: str
                        ) -> requests.Response:
        # Lent to auth strategies (OAuth2 token fetch): same pool, retries and evidence, no auth.
        shown = urlsplit(url).path
        return self._exchange(method, url, shown, data=data, operation=operation, mutation=False,
                              authenticate=False).response

    def _record(self, ex: Exchange) -> None:
        self.last_exchange = ex
        self.exchanges.append(ex)
        log.debug("catalog %s %s -> %s in %.1f ms (attempt %d%s)", ex.method, ex.path, ex.status,
                  ex.elapsed_ms, ex.attempt, f", {ex.error}" if ex.error else "")
        if self.on_exchange is not None:
            try:
                self.on_exchange(ex)
            except Exception:  # evidence must never break a call
                log.debug("on_exchange callback failed", exc_info=True)

    def _exchange(self, method: str, url: str, shown: str, *, params: Mapping[str, Any] | None = None,
                  json: Any = None, data: Any = None, headers: Mapping[str, str] | None = None,
                  operation: str, mutation: bool, idempotency_key: str | None = None,
                  authenticate: bool = True) -> _Outcome:
        """Send with retries. Returns the final response (possibly an error status); raises
        for transport failures, TLS errors and ambiguous mutations."""
        hdrs = dict(headers or {})
        key: str | None = None
        if mutation:
            key = idempotency_key or (str(uuid7()) if self.idempotency_enabled else None)
            self._tls.last_idempotency_key = key
            if key:
                hdrs[IDEMPOTENCY_HEADER] = key  # same key for every retry of this operation
        evidence_path = shown + _mask_params(params)
        policy = self.retry
        started = policy.clock()
        attempt = 0
        reauthed = False
        maybe_applied = False  # some attempt may have reached the server and changed state
        # Name the catalog (origin + base path) in messages, or the foreign URL for get_url/token.
        where = self.safe_uri if url.startswith(self.uri) else _safe_url(url)

        def ambiguous(cause: str, status: int | None = None) -> AmbiguousMutationError:
            if key:
                hint = f"repeat it with Idempotency-Key {key} or reconcile"
            else:
                hint = "the catalog has no idempotency support, so it was not retried; reconcile before retrying"
            return AmbiguousMutationError(
                f"{operation} ({method} {shown}) may or may not have been applied by the catalog at "
                f"{self.safe_uri} ({cause}): {hint}",
                operation=operation, method=method, path=shown, idempotency_key=key, status=status, cause=cause,
            )

        def key_expired(delay: float) -> bool:
            # Never retry under a key the server may already have forgotten: a replay after
            # the lifetime would be applied a second time. 10 % margin for clock/queue skew.
            life = self.idempotency_key_lifetime_seconds
            return bool(key) and life is not None and (policy.clock() - started) + delay >= 0.9 * life

        # Our own loop rather than tenacity's: each answer decides whether a repeat is still safe
        # (did it reach the server, does the Idempotency-Key outlive the wait), which a retry predicate can't see.
        while True:
            attempt += 1
            t0 = time.perf_counter()
            try:
                resp = self._session.request(
                    method, url, params=params, json=json, data=data, headers=hdrs,
                    auth=self.auth if authenticate else _NO_AUTH, timeout=self.timeout, verify=self.verify,
                )
            except CatalogExtError:
                raise  # from the auth hook (e.g. token endpoint refused us): already explained
            except requests.exceptions.SSLError:
                self._record(Exchange(operation, method, evidence_path, None, _ms(t0), attempt, "tls", key))
                raise CatalogError(
                    f"TLS handshake with {where} failed: the server certificate is not trusted or invalid; "
                    "pass a CA bundle (--ca-bundle / REQUESTS_CA_BUNDLE) or fix the certificate"
                ) from None
            except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                    requests.exceptions.InvalidSchema) as exc:
                raise ConfigError(f"invalid catalog URL {where!r}: {type(exc).__name__}") from None
            except requests.exceptions.RequestException as exc:
                cause, reached = _classify_transport(exc)
                self._record(Exchange(operation, method, evidence_path, None, _ms(t0), attempt, cause, key))
                if mutation and reached:
                    maybe_applied = True
                    if not key:
                        raise ambiguous(cause) from None
                delay = policy.next_delay(attempt)
                if policy.may_retry(attempt, started, delay) and not key_expired(delay):
                    policy.sleep(delay)
                    continue
                if mutation and maybe_applied:
                    raise ambiguous(f"{cause}, {attempt} attempts") from None
                raise CatalogUnavailableError(
                    f"cannot reach catalog at {where} ({_CAUSE_TEXT.get(cause, cause)}) for {method} {shown} "
                    f"after {attempt} attempt{'s' if attempt != 1 else ''} in {policy.clock() - started:.1f}s: "
                    "check --uri and that the catalog is running"
                ) from None

            status = resp.status_code
            self._record(Exchange(operation, method, evidence_path, status, _ms(t0), attempt, None, key))
            if status == 401 and authenticate and not reauthed and self.auth.invalidate(resp.request):
                # Token expired or revoked server-side: fetch a fresh one once. 401 means the
                # request was not applied, so this is safe for mutations too.
                reauthed = True
                attempt -= 1
                resp.close()
                continue
            if status in RETRYABLE_STATUSES:
                safe = status in SAFE_RETRY_STATUSES
                if mutation and not safe:
                    maybe_applied = True
                    if not key:
                        raise ambiguous(f"HTTP {status}", status)
                retry_after = parse_retry_after(resp.headers.get("Retry-After")) if safe else None
                delay = policy.next_delay(attempt, retry_after)
                if policy.may_retry(attempt, started, delay) and not key_expired(delay):
                    resp.close()
                    policy.sleep(delay)
                    continue
                if mutation and maybe_applied:
                    raise ambiguous(f"HTTP {status} after {attempt} attempts", status)
            elif mutation and maybe_applied and status in (404, 409):
                # An earlier attempt may have done the work (a drop, a commit): a "not found"
                # or "conflict" now may be our own earlier success. Only reconciliation can tell.
                raise ambiguous(f"HTTP {status} after an earlier attempt that may have been applied", status)
            elif mutation and status >= 500 and status not in (501, 505):
                # 500 on a mutation: the server may have applied it before failing (Iceberg
                # treats this as CommitStateUnknown). Never retried, always reconciled.
                raise ambiguous(f"HTTP {status} {_error_summary(resp)}", status)
            return _Outcome(resp, attempt, policy.clock() - started)

    # ------------------------------------------------------------------ internals: errors
    def _raise_for(self, resp: requests.Response, method: str, shown: str,
                   resource: tuple[str, str | None], outcome: _Outcome) -> None:
        status = resp.status_code
        err_type, message = _error_parts(resp)
        detail = f"{status} {err_type}: {message}" if message else f"{status} {err_type}"
        op = f"{method} {shown}"
        if status in (401, 419):
            raise CatalogAuthError(f"catalog rejected the credentials ({detail}) for {op}: check --credential/--token",
                                   status=status)
        if status == 403:
            raise CatalogAuthError(f"catalog denied {op} ({detail}): the principal lacks permission; check "
                                   "--credential/--token and the catalog's grants", status=status)
        if status == 404:
            kind = resource[0] if method == "HEAD" else _not_found_kind(err_type, message, resource, resp)
            if kind == "warehouse":
                text = (f"warehouse {self.warehouse!r} not found in catalog {self.safe_uri} ({detail}): "
                        "check --warehouse")
            elif kind == "config":
                text = (f"catalog has no endpoint {op} ({detail}): check --uri, it must be the Iceberg REST "
                        "root (the URL before /v1)")
                kind = "endpoint"
            elif kind == "endpoint":
                text = f"catalog has no endpoint {op} ({detail}): the server does not implement it"
            else:
                name = resource[1] if resource[0] == kind and resource[1] else "?"
                text = f"{kind} {name!r} not found ({detail}) for {op}: check the {kind} name"
            err = CatalogNotFoundError(text, status=status)
            err.kind = kind  # type: ignore[attr-defined]
            raise err
        if status in (405, 501):
            unsupported = CatalogUnsupportedError(f"catalog does not support {op} ({detail})", status=status)
            unsupported.kind = "endpoint"  # type: ignore[attr-defined]
            raise unsupported
        if status == 409:
            raise CatalogConflictError(f"catalog reported a conflict for {op} ({detail}): the object already "
                                       "exists or changed concurrently; reload and retry", status=status)
        if status == 429 or status >= 500:
            raise CatalogUnavailableError(
                f"catalog at {self.safe_uri} kept answering {detail} for {op} after {outcome.attempts} "
                f"attempt{'s' if outcome.attempts != 1 else ''} in {outcome.elapsed:.1f}s: it is overloaded or "
                "down; try again later", status=status)
        if status == 422:
            raise CatalogError(f"catalog rejected {op} ({detail}): an Idempotency-Key was reused for a "
                               "different request", status=status)
        raise CatalogError(f"catalog rejected {op} ({detail})", status=status)


_NO_AUTH = NoAuth()

_CAUSE_TEXT = {
    "connection-refused": "connection refused",
    "dns": "host name does not resolve",
    "connect-timeout": "connect timed out",
    "read-timeout": "read timed out",
    "connection-reset": "connection reset",
    "connection-error": "connection error",
}


def _request_secrets(request: requests.PreparedRequest | None,
                     params: Mapping[str, Any] | None) -> list[str]:
    found = [str(v) for k, v in (params or {}).items()
             if v is not None and any(w in k.lower() for w in _SECRET_PARAMS)]
    if request is not None:
        for header in ("Authorization", "X-Amz-Security-Token"):
            value = request.headers.get(header) or ""
            text = value.decode(errors="replace") if isinstance(value, bytes) else value
            found.append(text.split(" ", 1)[-1] if header == "Authorization" else text)
    return [s for s in found if len(s) >= 4]


def _scrub_exception(err: CatalogError, secrets: Sequence[str]) -> None:
    text = str(err)
    for secret in secrets:
        text = text.replace(secret, "***")
    if text != str(err):
        err.args = (text,)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def _classify_transport(exc: requests.exceptions.RequestException) -> tuple[str, bool]:
    """(cause, may_have_reached_server) for a transport failure."""
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
    for item in chain:
        if isinstance(item, urllib3.exceptions.NameResolutionError) or isinstance(item, socket.gaierror):
            return "dns", False
    for item in chain:
        if isinstance(item, urllib3.exceptions.NewConnectionError) or isinstance(item, ConnectionRefusedError):
            return "connection-refused", False
        if isinstance(item, urllib3.exceptions.ConnectTimeoutError):
            return "connect-timeout", False
    for item in chain:
        if isinstance(item, (urllib3.exceptions.ProtocolError, http.client.RemoteDisconnected,
                             ConnectionResetError, BrokenPipeError, urllib3.exceptions.ReadTimeoutError)):
            return "connection-reset", True
    # Unknown: assume the worst for mutations.
    return "connection-error", True


def _error_parts(resp: requests.Response) -> tuple[str, str]:
    """(type, message) from an Iceberg ErrorModel (or OAuth error) body, redacted, one line."""
    try:
        body = resp.json()
    except ValueError:
        text = " ".join((resp.text or "").split())[:200]
        return (resp.reason or "error").replace(" ", ""), redact(text)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("type") or "error"), redact(" ".join(str(err.get("message") or "").split())[:300])
        if isinstance(err, str):
            return err, redact(" ".join(str(body.get("error_description") or "").split())[:300])
        if "message" in body:
            return str(body.get("type") or "error"), redact(" ".join(str(body["message"]).split())[:300])
    return (resp.reason or "error").replace(" ", ""), ""


def _error_summary(resp: requests.Response) -> str:
    err_type, message = _error_parts(resp)
    return f"{err_type}: {message}" if message else err_type


def _not_found_kind(err_type: str, message: str, resource: tuple[str, str | None],
                    resp: requests.Response) -> str:
    t, m = err_type.lower(), message.lower()
    if resource[0] == "config":
        # /v1/config itself exists on every catalog; a 404 naming a warehouse/catalog means
        # the warehouse is wrong (Polaris, Lakekeeper), anything else a wrong --uri.
        return "warehouse" if ("warehouse" in t or "warehouse" in m or "catalog" in m) else "config"
    if "warehouse" in t or "table bucket" in m:
        return "warehouse"
    if resource[0] == "warehouse":
        return "warehouse"
    if "nosuchtable" in t:
        return "table"
    if "nosuchview" in t:
        return "view"
    if "nosuchnamespace" in t:
        return "namespace"
    if "warehouse" in m:
        return "warehouse"
    is_error_model = "json" in (resp.headers.get("Content-Type") or "")
    if not is_error_model or "path" in m or "route" in m or "endpoint" in t or t in ("notfound", "error"):
        return "endpoint"
    if "table" in m:
        return "table"
    if "namespace" in m:
        return "namespace"
    return resource[0] if resource[0] != "warehouse" else "warehouse"
