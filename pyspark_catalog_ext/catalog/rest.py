"""The one Python client to an Iceberg REST catalog: PyIceberg's `RestCatalog`, hardened.

Everything Python says to a catalog (staging helpers, `staged cleanup`, the doctor, `maintain`,
notifications, PyIceberg's refresh strategies and guarded commits) goes through a `CatalogClient`:
PyIceberg's session, `AuthManager` (OAuth2, bearer token, basic, SigV4), `/v1/config` handling,
URL building and pagination. What this module adds on that one session, each for a reason:

* **Bounded calls.** PyIceberg sends without a timeout and never retries a failed read; the
  session's adapter sets a default timeout and lets urllib3's `Retry` repeat reads (GET/HEAD) on
  connection errors, 429 and 502/503/504, honouring a capped `Retry-After`. Mutations are never
  repeated blindly: a POST whose answer is lost is reported as possibly applied. PyIceberg's SigV4
  adapter (whose own Retry would re-send a DELETE on 503 + Retry-After) gets the same `read_retry`.
* **No redirects.** No call of the session follows a 3xx (PyIceberg's included): `requests` would
  re-send a POST on 307/308 behind the commit guard's back, turn it into a GET on 303 (whose answer
  then looks like success), and keep `header.*` values on a hop to another host. A 3xx is a one-line
  `CatalogRedirectError` naming the target.
* **A server cannot move our credentials.** A `uri` override in `/v1/config` pointing at another
  origin is not followed (PyIceberg would send the token there), and a server-given URL on another
  origin (a refresh endpoint) is refused before anything is sent to it.
* **Evidence.** A response hook records each exchange (`Exchange`: method, path with secret query
  values masked, status, elapsed ms, attempts) for the doctor.
* **One-line errors.** `catalog_error` is the one translation of a catalog's HTTP answer into
  `errors.py`'s types; PyIceberg's own exceptions are translated through it (their cause is the
  HTTP answer), so every tool reports "what is wrong, what to check" the same way.
* **Calls PyIceberg has no method for,** as raw JSON on the same session: the load-table answer
  (cleanup and maintenance read metadata fields PyIceberg's model drops), stage-create and commit
  bodies (doctor probes), `/credentials` with a `storageRefreshToken`, a server-given refresh URL
  (the catalog's own origin only), and Polaris's policy API.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, cast
from urllib.parse import urljoin, urlsplit, urlunsplit

import pydantic_core
import requests
import requests.adapters
import urllib3.exceptions
from pyiceberg.catalog.rest import Endpoints, RestCatalog
from pyiceberg.exceptions import BadRequestError
from pyiceberg.typedef import Identifier
from requests import Response, Session
from urllib3.util.retry import Retry

from pyspark_catalog_ext.catalog.commit_policy import CommitPolicy
from pyspark_catalog_ext.catalog.connection import CatalogConnection, pyiceberg_names
from pyspark_catalog_ext.catalog.idempotency import parse_iso8601_duration, uuid7
from pyspark_catalog_ext.errors import (
    CatalogAuthError,
    CatalogConflictError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogRedirectError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    ConfigError,
    redact,
)
from pyspark_catalog_ext.secret_keys import is_secret_param

__all__ = ["CatalogClient", "Exchange", "PurgeRequiredError", "also_pyiceberg", "catalog_error", "open_catalog", "safe_url",
           "transport_cause"]

log = logging.getLogger(__name__)

ACCESS_DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
IDEMPOTENCY_HEADER = "Idempotency-Key"
Namespace = str | Sequence[str]
_MUTATIONS = frozenset({"POST", "PUT", "DELETE", "PATCH"})
DEFAULT_TIMEOUT = (5.0, 60.0)  # (connect, read) seconds for every call PyIceberg sends without one


@dataclass(frozen=True)
class Exchange:
    """Evidence of one HTTP exchange. Contains no secrets (query secrets are masked)."""

    operation: str
    method: str
    path: str
    status: int | None
    elapsed_ms: float
    attempt: int
    error: str | None = None
    idempotency_key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "method": self.method, "path": self.path, "status": self.status,
                "elapsed_ms": round(self.elapsed_ms, 1), "attempt": self.attempt, "error": self.error,
                "idempotency_key": self.idempotency_key}


class _CappedRetry(Retry):
    """urllib3's Retry with `Retry-After` capped: a server asking for an hour must not stall a job."""

    RETRY_AFTER_CAP_S = 10.0

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, self.RETRY_AFTER_CAP_S)


def read_retry(attempts: int = 3) -> Retry:
    """Reads are repeated on connection errors, timeouts, 429 and 502/503/504; mutations only when the
    connection was never made (urllib3 repeats connect errors for every method: nothing was sent)."""
    return _CappedRetry(total=attempts, connect=attempts, read=attempts, status=attempts, other=0,
                        allowed_methods=frozenset({"GET", "HEAD"}), status_forcelist=(429, 502, 503, 504),
                        backoff_factor=0.2, backoff_max=2.0, respect_retry_after_header=True,
                        raise_on_status=False, raise_on_redirect=False, redirect=0)


class _BoundedAdapter(requests.adapters.HTTPAdapter):
    """Pooled connections with a default timeout (PyIceberg passes none) and `read_retry`.

    `ca_bundle`: the catalog's own CA (PyIceberg's `ssl.cabundle`), applied here because requests lets
    a REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE variable override a session's `verify` (psf/requests#3829)."""

    def __init__(self, timeout: tuple[float, float], retries: Retry, ca_bundle: str | None = None,
                 pool_maxsize: int = 16) -> None:
        super().__init__(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=retries)
        self._timeout = timeout
        self._ca_bundle = ca_bundle

    def send(self, request: Any, **kwargs: Any) -> Response:  # type: ignore[override]
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        if self._ca_bundle is not None and kwargs.get("verify") is not False:
            kwargs["verify"] = self._ca_bundle
        return super().send(request, **kwargs)


class CatalogClient(RestCatalog):
    """PyIceberg's RestCatalog with bounded calls, evidence, one-line errors and the raw calls our tools need.

    Args:
        name, properties: as for `RestCatalog` (PyIceberg property names; see `connection.pyiceberg_names`
            for a Spark catalog's).
        on_exchange: called with each `Exchange` (doctor evidence); exceptions in it are ignored.
        timeout: (connect, read) seconds for calls sent without a timeout.
        retries: attempts for a read (and for a connection that never opened).
    """

    shim = True  # a CatalogReader: its own session reads every route, Polaris's policy API included

    def __init__(self, name: str, *, on_exchange: Callable[[Exchange], None] | None = None,
                 timeout: tuple[float, float] = DEFAULT_TIMEOUT, retries: int = 3, **properties: Any) -> None:
        if "uri" not in properties:  # PyIceberg's RestCatalog raises KeyError('uri'): ours is one too
            raise also_pyiceberg(ConfigError("the catalog has no uri: pass uri=http(s)://host[:port][/path]"), KeyError("uri"))
        uri = str(properties.get("uri") or "")
        parts = urlsplit(uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"invalid catalog URI {safe_url(uri)!r}: expected http(s)://host[:port][/path]")
        self.safe_uri = safe_url(uri.rstrip("/"))
        self.warehouse = properties.get("warehouse")
        self.on_exchange = on_exchange
        self.exchanges: collections.deque[Exchange] = collections.deque(maxlen=256)
        self.config_answer: dict[str, Any] = {}
        self.idempotency_key_lifetime: str | None = None
        self.idempotency_key_lifetime_s: float | None = None
        self._timeout, self._retries = timeout, retries
        self._user_uri, self._user_origin = uri, _origin(uri)
        #: `catalog-ext.commit.*`: retry bounds and Idempotency-Key use, as Spark's CommitGuard reads them.
        self.commit_policy = CommitPolicy.from_properties(properties)
        self._sent_keys = threading.local()
        #: The catalog's clock minus ours (s), from the Date header of its last answer; None before one.
        self.clock_skew_s: float | None = None
        self.clock_skew_evidence: dict[str, Any] | None = None
        with self._answers("GET /v1/config", ("config", None)):
            super().__init__(name, **properties)

    def __enter__(self) -> CatalogClient:  # (PyIceberg's is typed as its base Catalog)
        return self

    def __repr__(self) -> str:  # PyIceberg's repr would print properties, secrets included
        return f"{type(self).__name__}(uri={self.safe_uri!r}, warehouse={self.warehouse!r}, auth={self.auth_kind!r})"

    # -- the session -----------------------------------------------------------------------------
    def _create_session(self) -> Session:
        session = super()._create_session()
        ca_bundle = session.verify if isinstance(session.verify, str) else None
        adapter = _BoundedAdapter(self._timeout, read_retry(self._retries), ca_bundle)
        for prefix, mounted in list(session.adapters.items()):
            # PyIceberg's SigV4 adapter stays mounted on the catalog URI, but with our Retry: its own
            # (Retry(10)) repeats DELETE and PUT on read errors and on 503/429 with Retry-After.
            if isinstance(mounted, requests.adapters.HTTPAdapter) and prefix not in ("http://", "https://"):
                mounted.max_retries = read_retry(self._retries)
                _check_credentials_when_signing(mounted)
        for scheme in ("http://", "https://"):
            session.mount(scheme, adapter)
        if session.headers.get(ACCESS_DELEGATION_HEADER) == "":  # `delegation=""`: ask for no delegation
            del session.headers[ACCESS_DELEGATION_HEADER]
        hooks = [h for h in session.hooks["response"] if h is not _refuse_redirect]
        session.hooks["response"] = [*hooks, self._on_response, _refuse_redirect]  # evidence first, then refuse
        _follow_no_redirect(session)
        session.auth = _IdempotencyKeys(session.auth, self)
        return session

    def _create_legacy_oauth2_auth_manager(self, session: Session) -> Any:
        # PyIceberg's OAuth2 manager fetches its first token while the session is being built, before
        # `_create_session` returns: a 307 on that POST would re-send the client secret to Location.
        _follow_no_redirect(session)
        return super()._create_legacy_oauth2_auth_manager(session)

    def _fetch_config(self) -> None:
        super()._fetch_config()
        if _origin(self.uri) != self._user_origin:
            # A config answer must not redirect our token and headers to another host.
            log.warning("catalog-ext: the catalog's /v1/config names another uri (%s); keeping %s",
                        safe_url(self.uri), self.safe_uri)
            self.uri = self.properties["uri"] = self._user_uri

    def _on_response(self, resp: Response, *args: Any, **kwargs: Any) -> None:
        request = resp.request
        if request is None:
            return
        path = request.path_url.split("?")[0]
        if path.endswith("/v1/config") and resp.status_code == 200:
            self._remember_config(resp)
        self._note_date(resp, path)
        history = getattr(getattr(resp.raw, "retries", None), "history", ()) or ()
        key = request.headers.get(IDEMPOTENCY_HEADER)
        exchange = Exchange(_operation(request.method or "", path), request.method or "",
                            path + _mask_query(urlsplit(request.url or "").query), resp.status_code,
                            resp.elapsed.total_seconds() * 1000.0, len(history) + 1, None,
                            key.decode() if isinstance(key, bytes) else key)
        self.exchanges.append(exchange)
        if self.on_exchange is not None:
            try:
                self.on_exchange(exchange)
            except Exception:  # evidence must never break a call
                log.debug("on_exchange callback failed", exc_info=True)

    def _note_date(self, resp: Response, path: str) -> None:
        # Expiries the catalog states are on its clock: remember how far it is from ours.
        date = resp.headers.get("Date")
        if not date:
            return
        try:
            server = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError):
            return
        local = time.time() - resp.elapsed.total_seconds() / 2  # about when the server wrote the header
        self.clock_skew_s = server - local
        self.clock_skew_evidence = {"source": "catalog", "path": path, "date": date, "local_time": round(local, 3),
                                    "skew_s": round(server - local, 3)}

    def _remember_config(self, resp: Response) -> None:
        try:
            body = resp.json()
        except ValueError:
            return  # PyIceberg reports a malformed config itself
        if not isinstance(body, dict):
            return
        self.config_answer = body
        # A malformed answer (PyIceberg then reports it) must not break here: only objects are read.
        overrides, defaults = ({} if not isinstance(part, dict) else part for part in (body.get("overrides"), body.get("defaults")))
        # Spec: top level; Lakekeeper <= 0.13 puts it inside overrides (lakekeeper#1952).
        lifetime = body.get("idempotency-key-lifetime") or overrides.get("idempotency-key-lifetime") \
            or defaults.get("idempotency-key-lifetime")
        self.idempotency_key_lifetime = str(lifetime) if lifetime else None
        self.idempotency_key_lifetime_s = None
        if lifetime:
            try:
                self.idempotency_key_lifetime_s = parse_iso8601_duration(str(lifetime))
            except ValueError:
                log.warning("catalog-ext: unparseable idempotency-key-lifetime %r; commits are reconciled instead",
                            lifetime)

    # -- what the catalog said about itself --------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """Ask `/v1/config` again (the doctor's evidence) and return its answer."""
        with self._answers("GET /v1/config", ("config", None)):
            self._fetch_config()
        return self.config_answer

    @property
    def prefix(self) -> str | None:
        return (self.properties.get("prefix") or "").strip("/") or None

    @property
    def endpoints(self) -> list[str] | None:
        """Endpoints the server advertised ("GET /v1/{prefix}/namespaces", ...), None if it sent no list."""
        advertised = self.config_answer.get("endpoints")
        return [str(e) for e in advertised] if isinstance(advertised, list) else None

    def supports_endpoint(self, endpoint: str) -> bool | None:
        """Whether `endpoint` was advertised; None when the server advertised no list (try it and see)."""
        if self.endpoints is None:
            return None
        return " ".join(endpoint.split()) in {" ".join(e.split()) for e in self.endpoints}

    @property
    def auth_kind(self) -> str:
        """How requests are authenticated: "sigv4 (<name>)", "oauth2", "bearer", "basic" or "none"."""
        if str(self.properties.get("rest.sigv4-enabled", "")).lower() == "true":
            return f"sigv4 ({self.properties.get('rest.signing-name', 'execute-api')})"
        auth = self.properties.get("auth")
        if isinstance(auth, Mapping) and auth.get("type"):
            return str(auth["type"])
        if self.properties.get("credential"):
            return "oauth2"
        return "bearer" if self.properties.get("token") else "none"

    @property
    def access_delegation(self) -> str | None:
        """The X-Iceberg-Access-Delegation every table load and create asks for (None: none)."""
        value = self._session.headers.get(ACCESS_DELEGATION_HEADER)
        return str(value) if value else None

    @property
    def request_auth(self) -> Any:
        """The session's `requests` auth (the catalog's token), for a service the catalog sends us to
        on its behalf, such as its S3 request signer."""
        return self._session.auth

    @property
    def last_idempotency_key(self) -> str | None:
        """The Idempotency-Key the calling thread's last mutation carried (None if none)."""
        return getattr(self._sent_keys, "last", None)

    def sends_keys(self) -> bool:
        """Whether mutations get an Idempotency-Key: where the catalog advertises a lifetime, unless
        `catalog-ext.commit.idempotency` says always or never."""
        return self.commit_policy.sends_keys(self.idempotency_key_lifetime_s)

    # -- tool calls: plain data, `errors.py` types -----------------------------------------------
    def namespaces(self, parent: Namespace = ()) -> list[tuple[str, ...]]:
        """Namespaces under `parent` (all pages)."""
        with self._answers("list namespaces", ("namespace", _dotted(parent)) if parent else ("warehouse", None)):
            return [tuple(ns) for ns in self.list_namespaces(_levels(parent))]

    def tables(self, namespace: Namespace) -> list[tuple[str, ...]]:
        """Identifiers (namespace levels..., name) of the tables in `namespace` (all pages)."""
        with self._answers("list tables", ("namespace", _dotted(namespace))):
            return [tuple(t) for t in self.list_tables(_levels(namespace))]

    def namespace_properties(self, namespace: Namespace) -> dict[str, str]:
        with self._answers("load namespace", ("namespace", _dotted(namespace))):
            return dict(self.load_namespace_properties(_levels(namespace)))

    def has_namespace(self, namespace: Namespace) -> bool:
        with self._answers("namespace exists", ("namespace", _dotted(namespace))):
            return self.namespace_exists(_levels(namespace))

    def has_table(self, identifier: Sequence[str]) -> bool:
        with self._answers("table exists", ("table", _dotted(identifier))):
            return self.table_exists(tuple(identifier))

    def make_namespace(self, namespace: Namespace, properties: Mapping[str, str] | None = None) -> None:
        with self._answers("create namespace", ("namespace", _dotted(namespace))):
            self.create_namespace(_levels(namespace), dict(properties or {}))

    def remove_namespace(self, namespace: Namespace) -> None:
        with self._answers("drop namespace", ("namespace", _dotted(namespace))):
            self.drop_namespace(_levels(namespace))

    def remove_table(self, identifier: Sequence[str], *, purge: bool = False) -> None:
        with self._answers("drop table", ("table", _dotted(identifier))):
            self.drop_table(tuple(identifier), purge_requested=purge)

    # -- drops: the one reading of a refused plain drop ----------------------------------------------
    def drop_table(self, identifier: str | Identifier, purge_requested: bool = False) -> None:
        """PyIceberg's drop; a catalog that drops tables only with their data (S3 Tables answers a
        plain drop with 400) gets `PurgeRequiredError`: one line saying so and what to call instead.
        Read here, once, for every Python caller (PyIceberg users, the doctor, `remove_table`)."""
        try:
            super().drop_table(identifier, purge_requested)
        except BadRequestError as exc:
            if purge_requested:
                raise
            name = identifier if isinstance(identifier, str) else ".".join(identifier)
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise PurgeRequiredError(
                f"the catalog refused to drop {name} and keep its data ({redact(first)}); where a catalog drops "
                "tables only with their data (S3 Tables), call purge_table() (SQL: DROP TABLE ... PURGE), which "
                "deletes the table's files") from None

    def table_url(self, identifier: Sequence[str], tail: str = "") -> str:
        ident = tuple(identifier)
        if len(ident) < 2 or not ident[-1]:
            raise ConfigError(f"invalid table identifier {'.'.join(ident)!r}: expected namespace.table")
        return self.url(Endpoints.load_table, prefixed=True, **self._split_identifier_for_path(ident)) + tail

    def load_table_json(self, identifier: Sequence[str], *, delegation: str | None = None) -> dict[str, Any]:
        """The LoadTableResult as JSON (metadata-location, metadata, config, storage-credentials)."""
        return self._object("GET", self.table_url(identifier), ("table", _dotted(identifier)),
                            headers=_delegation(delegation), required=("metadata",))

    def create_table_json(self, namespace: Namespace, body: Mapping[str, Any], *, stage_create: bool = False,
                          delegation: str | None = None) -> dict[str, Any]:
        """POST a CreateTableRequest (`stage-create` when asked); the LoadTableResult as JSON."""
        if not body.get("name") or "schema" not in body:
            raise ConfigError("create_table body needs at least 'name' and 'schema'")
        payload = {**body, "stage-create": True} if stage_create else dict(body)
        url = self.url(Endpoints.create_table, namespace=self._encode_namespace_path(_levels(namespace)))
        return self._object("POST", url, ("namespace", _dotted(namespace)), json=payload,
                            headers=_delegation(delegation), required=("metadata",))

    def commit_table_json(self, identifier: Sequence[str], requirements: Sequence[Mapping[str, Any]],
                          updates: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
                          ) -> dict[str, Any]:
        """POST a CommitTableRequest as given (doctor probes); {"metadata-location", "metadata"}."""
        ident = tuple(identifier)
        payload = {"identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                   "requirements": list(requirements), "updates": list(updates)}
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else None
        return self._object("POST", self.table_url(ident), ("table", _dotted(ident)), json=payload,
                            headers=headers, required=("metadata-location", "metadata"))

    def load_credentials_json(self, identifier: Sequence[str], *, storage_refresh_token: str | None = None
                              ) -> dict[str, Any]:
        """GET .../credentials[?storageRefreshToken=] (spec PR 15280): {"storage-credentials": [...]}."""
        params = {"storageRefreshToken": storage_refresh_token} if storage_refresh_token else None
        body = self._object("GET", self.table_url(identifier, "/credentials"), ("table", _dotted(identifier)),
                            params=params, required=("storage-credentials",))
        if not isinstance(body["storage-credentials"], list):
            raise CatalogError(f"catalog returned malformed JSON for GET {_dotted(identifier)} credentials: "
                               "storage-credentials must be a list")
        return body

    def get_url(self, url: str) -> Any:
        """GET a server-given URL (`client.refresh-credentials-endpoint`), absolute or relative to the
        catalog, on the catalog's own origin only. Another origin is refused before any request: with
        credentials it would exfiltrate them, without them it is a request to wherever the server
        points us (blind SSRF). A `CatalogError`, so a refresh falls through to the next strategy."""
        full = urljoin(self.uri.rstrip("/") + "/", url)
        if urlsplit(full).scheme not in ("http", "https"):
            raise CatalogError(f"refusing the server-given URL {safe_url(full)!r}: not http(s); only the catalog's "
                               f"own origin ({self.safe_uri}) is called")
        if _origin(full) != self._user_origin:
            raise CatalogError(f"refusing the server-given URL {safe_url(full)!r}: it is not on the catalog's origin "
                               f"({self.safe_uri}) and nothing is sent elsewhere")
        return self._call("GET", full, ("endpoint", None))

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
             headers: Mapping[str, str] | None = None) -> Any:
        """Any catalog call (Polaris's `/polaris/v1/{prefix}/...`, notifications). "{prefix}" in `path` is
        the catalog's prefix. Parsed JSON, or None for an empty answer."""
        path = path.replace("/{prefix}", f"/{self.prefix}" if self.prefix else "")
        return self._call(method.upper(), self.uri.rstrip("/") + "/" + path.lstrip("/"), ("endpoint", None),
                          params=params, json=json, headers=headers)

    # -- internals --------------------------------------------------------------------------------
    def _object(self, method: str, url: str, resource: tuple[str, str | None], *,
                required: Sequence[str] = (), **kwargs: Any) -> dict[str, Any]:
        body = self._call(method, url, resource, **kwargs)
        shown = f"{method} {urlsplit(url).path}"
        if not isinstance(body, dict):
            raise CatalogError(f"catalog returned malformed JSON for {shown}: expected an object")
        missing = [k for k in required if k not in body]
        if missing:
            raise CatalogError(f"catalog returned malformed JSON for {shown}: missing {', '.join(missing)}")
        return body

    def _call(self, method: str, url: str, resource: tuple[str, str | None], *, params: Mapping[str, Any] | None = None,
              json: Any = None, headers: Mapping[str, str] | None = None) -> Any:
        shown = f"{method} {urlsplit(url).path}"
        send = dict(headers or {})
        for renewal in (False, True):
            try:
                resp = self._session.request(method, url, params=params, json=json, headers=send)
            except requests.RequestException as exc:
                raise transport_error(exc, shown, _where(url, self), mutation=method in _MUTATIONS) from None
            # An expired token (401; 419 on Gravitino) was not applied: renew it once and resend.
            if resp.status_code in (401, 419) and not renewal and self._renew_token():
                continue
            break
        if resp.status_code >= 400:
            raise _scrubbed(catalog_error(resp, shown, resource, self), resp, params)
        if method == "HEAD" or resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            snippet = " ".join(resp.text[:60].split())
            raise CatalogError(f"catalog returned malformed JSON for {shown} (body starts {snippet!r}); check that "
                               "--uri points at the Iceberg REST endpoint", status=resp.status_code) from None

    def _renew_token(self) -> bool:
        try:
            self._refresh_token()  # PyIceberg's own renewal (its legacy OAuth2 manager; others renew themselves)
        except Exception:
            return False
        return True

    @contextlib.contextmanager
    def _answers(self, what: str, resource: tuple[str, str | None]) -> Iterator[None]:
        """Run PyIceberg calls, turning their exceptions into `errors.py`'s one-line types."""
        try:
            yield
        except CatalogExtError:
            raise
        except NotImplementedError as exc:  # PyIceberg's check of the advertised endpoints
            raise also_pyiceberg(CatalogUnsupportedError(f"catalog at {self.safe_uri} does not support {what}: "
                                                         f"{redact(str(exc))}"), exc) from None
        except requests.RequestException as exc:
            raise also_pyiceberg(transport_error(exc, what, self.safe_uri, mutation=False), exc) from None
        except Exception as exc:
            cause = exc.__cause__
            if isinstance(cause, requests.HTTPError) and cause.response is not None:
                raise also_pyiceberg(catalog_error(cause.response, what, resource, self), exc) from None
            if type(exc).__module__.startswith(("pyiceberg", "pydantic")):
                raise also_pyiceberg(CatalogError(f"catalog at {self.safe_uri} failed to {what}: {type(exc).__name__}: "
                                                  f"{redact(str(exc))[:200]}"), exc) from None
            raise


class PurgeRequiredError(CatalogUnsupportedError, BadRequestError):
    """The catalog refused a drop that keeps the data (S3 Tables): ours, and still PyIceberg's
    BadRequestError for code that catches that."""


class _IdempotencyKeys:
    """Wraps the session's auth: a mutation gets a fresh UUIDv7 Idempotency-Key when `sends_keys()` (PyIceberg
    retries none of them, so one key per request); a request that brings its own keeps it."""

    def __init__(self, inner: Any, catalog: CatalogClient) -> None:
        self.inner = inner
        self._catalog = catalog

    def __call__(self, request: Any) -> Any:
        request = self.inner(request) if self.inner is not None else request
        if request.method in _MUTATIONS and not request.path_url.split("?")[0].endswith("/oauth/tokens"):
            if IDEMPOTENCY_HEADER not in request.headers and self._catalog.sends_keys():
                request.headers[IDEMPOTENCY_HEADER] = str(uuid7())
            self._catalog._sent_keys.last = request.headers.get(IDEMPOTENCY_HEADER)
        return request

    def __getattr__(self, name: str) -> Any:  # RestCatalog._refresh_token reads .auth_manager
        return getattr(self.inner, name)


def _follow_no_redirect(session: Session) -> None:
    if _refuse_redirect not in session.hooks["response"]:
        session.hooks["response"].append(_refuse_redirect)
    # Should the hook ever be bypassed, requests raises TooManyRedirects before sending anything.
    session.max_redirects = 0


def _refuse_redirect(resp: Response, *args: Any, **kwargs: Any) -> None:
    """Response hook: a 3xx that requests would follow becomes a `CatalogRedirectError` instead (runs
    before requests' redirect handling, so nothing is re-sent)."""
    if not resp.is_redirect:
        return
    request = resp.request
    method = (request.method or "") if request is not None else ""
    shown = f"{method} {urlsplit((request.url or '') if request is not None else '').path}"
    target = safe_url(urljoin(resp.url or "", resp.headers.get("Location") or ""))
    resp.close()
    applied = (" The request may have been applied: check before repeating it (a 303 means the server took it)."
               if method in _MUTATIONS else "")
    raise CatalogRedirectError(
        f"catalog answered HTTP {resp.status_code} to {shown}, redirecting to {target}: redirects are not followed "
        f"(they could re-send a commit or carry credentials elsewhere); if that is the catalog's address, set --uri "
        f"(the catalog's uri) to it.{applied}", status=resp.status_code, location=target)


def _check_credentials_when_signing(adapter: Any) -> None:
    """PyIceberg's SigV4 adapter asks its boto3 session for credentials each time it signs, and fails
    with an AttributeError when there are none. Check at that same moment (credentials a test or
    botocore supplies later still count) and say it in one line, as an AttributeError too."""
    boto_session = getattr(adapter, "_boto_session", None)  # PyIceberg 0.12's SigV4Adapter
    sign = getattr(adapter, "add_headers", None)
    if boto_session is None or sign is None:
        return

    def add_headers(request: Any, **kwargs: Any) -> None:
        if boto_session.get_credentials() is None:
            raise also_pyiceberg(ConfigError(
                "SigV4 signs catalog requests with your AWS credentials and none were found: set "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or run with an instance role"),
                AttributeError("'NoneType' object has no attribute 'get_frozen_credentials'"))
        sign(request, **kwargs)

    adapter.add_headers = add_headers


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
def catalog_error(resp: Response, op: str, resource: tuple[str, str | None], catalog: CatalogClient | None = None
                  ) -> CatalogError:
    """The `errors.py` exception for a non-2xx catalog answer: typed, one line, redacted."""
    status = resp.status_code
    err_type, message = error_parts(resp)
    detail = f"HTTP {status} {err_type}: {message}" if message else f"HTTP {status} {err_type}"
    where = catalog.safe_uri if catalog is not None else safe_url(resp.url or "")
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
        warehouse = catalog.warehouse if catalog is not None else None
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
    if status in (405, 501):
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


def _scrubbed(err: CatalogError, resp: Response, params: Mapping[str, Any] | None) -> CatalogError:
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


# -- small helpers ----------------------------------------------------------------------------------
def safe_url(url: str) -> str:
    """A URL without userinfo and without query (query strings may carry secrets)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else (parts.hostname or "")
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


def _where(url: str, catalog: CatalogClient) -> str:
    return catalog.safe_uri if _origin(url) == catalog._user_origin else safe_url(url)


def _mask_query(query: str) -> str:
    if not query:
        return ""
    masked = []
    for pair in query.split("&"):
        name, sep, _ = pair.partition("=")
        masked.append(f"{name}=***" if sep and is_secret_param(name) else pair)
    return "?" + "&".join(masked)


# Operation names in evidence, by the route's last fixed segment (most specific first).
_ROUTES = (("/v1/config", "config"), ("/oauth/tokens", "oauth_token"), ("/credentials", "load_credentials"),
           ("/applicable-policies", "applicable_policies"), ("/notifications", "notification"),
           ("/transactions/commit", "commit_transaction"), ("/tables/rename", "rename_table"))


def _operation(method: str, path: str) -> str:
    for tail, name in _ROUTES:
        if tail in path:
            return name
    parts = path.rstrip("/").split("/")
    if "tables" in parts:
        at_table = parts[-2] == "tables"
        return {("GET", True): "load_table", ("HEAD", True): "table_exists", ("POST", True): "commit_table",
                ("DELETE", True): "drop_table", ("GET", False): "list_tables",
                ("POST", False): "create_table"}.get((method, at_table), f"{method} tables")
    if "namespaces" in parts:
        at_namespace = parts[-1] != "namespaces"
        return {("GET", True): "load_namespace", ("HEAD", True): "namespace_exists", ("DELETE", True): "drop_namespace",
                ("GET", False): "list_namespaces", ("POST", False): "create_namespace"}.get(
                    (method, at_namespace), f"{method} namespaces")
    return f"{method} {path}"


def _levels(namespace: Namespace) -> tuple[str, ...]:
    return (namespace,) if isinstance(namespace, str) else tuple(namespace)


def _dotted(identifier: Namespace) -> str:
    return ".".join(_levels(identifier))


def _delegation(value: str | None) -> dict[str, str] | None:
    return {ACCESS_DELEGATION_HEADER: value} if value else None


def open_catalog(source: Mapping[str, str] | CatalogConnection, *, name: str = "catalog-ext", delegation: str | None = None,
                 **kwargs: Any) -> CatalogClient:
    """A `CatalogClient` for a `CatalogConnection`, or for the catalog a Spark catalog's properties
    describe (`uri`, `warehouse`, auth, `header.*`): the same catalog, principal and headers,
    X-Iceberg-Access-Delegation included (sent only when the connection sets it; `delegation`
    overrides it, "" sends none)."""
    props = source.spark_properties(shim=False) if isinstance(source, CatalogConnection) else source
    if not props.get("uri"):
        raise ConfigError("the catalog properties have no uri: set spark.sql.catalog.<name>.uri (or --uri)")
    properties = pyiceberg_names(props)
    # As the Spark catalog does: the header only where the properties ask for it (PyIceberg would
    # otherwise send vended-credentials to every catalog).
    properties["header." + ACCESS_DELEGATION_HEADER] = delegation if delegation is not None \
        else str(props.get("header." + ACCESS_DELEGATION_HEADER) or "")
    return CatalogClient(name, **kwargs, **properties)


def __getattr__(name: str) -> Any:
    if name == "CatalogRest":  # an ImportError: `from ... import` would replace an AttributeError's words with its own
        raise ImportError("pyspark_catalog_ext.catalog.rest.CatalogRest is now CatalogClient; import that instead")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
