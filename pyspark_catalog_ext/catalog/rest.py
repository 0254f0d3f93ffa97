"""The one Python client to an Iceberg REST catalog: PyIceberg's `RestCatalog`, hardened.

Everything Python says to a catalog goes through a `CatalogClient`: PyIceberg's session,
`AuthManager`, `/v1/config` handling, URL building and pagination. Added on that one session: how
calls are sent (`transport`), only to the catalog's trust set (`trust.TrustedOrigins`; a `uri`
override to another origin is not followed), evidence of each exchange (`exchanges`), one-line
errors (`answers`), lost answers looked at, never repeated (`lost_answers`), and the calls
PyIceberg has no method for (`raw_calls`).

Why: docs/architecture.md, section 'The Python catalog client'.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import requests
from pyiceberg.catalog.rest import RestCatalog, TableResponse
from pyiceberg.catalog.rest.auth import AUTH_MANAGER
from pyiceberg.exceptions import BadRequestError
from pyiceberg.io import FileIO, load_file_io
from pyiceberg.table import StagedTable, Table
from pyiceberg.typedef import EMPTY_DICT, Identifier, Properties
from requests import Response, Session

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.answers import also_pyiceberg, catalog_error, transport_error
from pyspark_catalog_ext.catalog.connection import CatalogConnection, pyiceberg_names
from pyspark_catalog_ext.catalog.exchanges import Exchange, mask_query, operation
from pyspark_catalog_ext.catalog.lost_answers import LostAnswers
from pyspark_catalog_ext.catalog.raw_calls import ACCESS_DELEGATION_HEADER, IDEMPOTENCY_HEADER, Namespace, RawCalls, dotted, levels
from pyspark_catalog_ext.catalog.server_settings import config_properties, table_io_properties, without_code_keys
from pyspark_catalog_ext.catalog.transport import (
    DEFAULT_TIMEOUT,
    MUTATIONS,
    BoundedAdapter,
    follow_no_redirect,
    guard_sigv4_signing,
    read_retry,
    refuse_redirect,
)
from pyspark_catalog_ext.catalog.trust import Origin, TrustedOrigins, origin_or_none
from pyspark_catalog_ext.catalog.trust_rules import server_may_set
from pyspark_catalog_ext.catalog.urls import safe_url
from pyspark_catalog_ext.commit.idempotency import parse_iso8601_duration, uuid7
from pyspark_catalog_ext.commit.policy import CommitPolicy
from pyspark_catalog_ext.errors import (
    CatalogError,
    CatalogExtError,
    CatalogUnsupportedError,
    ConfigError,
    redact,
)

__all__ = ["CatalogClient", "Exchange", "PurgeRequiredError", "open_catalog"]

log = logging.getLogger(__name__)


class CatalogClient(LostAnswers, RawCalls, RestCatalog):
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
        self._user_uri, self._user_origin = uri, origin_or_none(uri)
        #: Where requests carrying the catalog's credentials may go: decided from the user's properties
        #: only, before any server answer is merged in.
        self.trust = TrustedOrigins.from_user_properties(properties)
        #: What the user configured, before any server answer: a server may set only what
        #: `trust_rules` allows over it (`server_settings`).
        self.user_properties: dict[str, Any] = dict(properties)
        # Every secret the user gave is masked by value in our messages and logs from now on.
        logsafety.mask_conf_secrets({str(k): str(v) for k, v in properties.items() if isinstance(v, str)})
        logsafety.install()
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
        self._send_only_to_trusted(session)
        for prefix, mounted in list(session.adapters.items()):
            # PyIceberg's SigV4 adapter stays mounted on the catalog URI, but with our Retry: its own
            # (Retry(10)) repeats DELETE and PUT on read errors and on 503/429 with Retry-After.
            if isinstance(mounted, requests.adapters.HTTPAdapter) and prefix not in ("http://", "https://"):
                mounted.max_retries = read_retry(self._retries)
                guard_sigv4_signing(mounted, self.trust, self._server_setting)
        if session.headers.get(ACCESS_DELEGATION_HEADER) == "":  # `delegation=""`: ask for no delegation
            del session.headers[ACCESS_DELEGATION_HEADER]
        hooks = [h for h in session.hooks["response"] if h is not refuse_redirect]
        session.hooks["response"] = [*hooks, self._on_response, refuse_redirect]  # evidence first, then refuse
        session.auth = _IdempotencyKeys(session.auth, self)
        self._register_token()
        return session

    def _register_token(self) -> None:
        """The catalog token the auth manager holds (fetched while the session was built): masked by value."""
        manager = getattr(self, "_auth_manager", None)
        try:
            header = manager.auth_header() if manager is not None else None
        except Exception:  # a token endpoint that fails is reported by the first call, not here
            return
        if header:
            logsafety.register([header, header.split(" ", 1)[-1]])

    def _create_legacy_oauth2_auth_manager(self, session: Session) -> Any:
        # PyIceberg's OAuth2 manager fetches its first token while the session is being built, before
        # `_create_session` returns: that POST, which carries the client secret, must already go only
        # to a trusted origin, and a 307 on it would re-send the secret to Location.
        self._send_only_to_trusted(session)
        return super()._create_legacy_oauth2_auth_manager(session)

    def _send_only_to_trusted(self, session: Session) -> None:
        """Our adapter (bounded, trusted origins only) for every URL, and no redirects (idempotent)."""
        if not isinstance(session.adapters.get("http://"), BoundedAdapter):
            ca_bundle = session.verify if isinstance(session.verify, str) else None
            adapter = BoundedAdapter(self._timeout, read_retry(self._retries), ca_bundle, trust=self.trust,
                                     key_of=self._server_setting)
            for scheme in ("http://", "https://"):
                session.mount(scheme, adapter)
        follow_no_redirect(session)

    def _fetch_config(self) -> None:
        super()._fetch_config()
        # PyIceberg merged the answer's defaults and overrides over the user's properties: keep only
        # what a server may set (no py-io-impl, auth, proxy or catalog-ext.* knob from a server).
        self.properties = config_properties(self.name, self.user_properties, self.properties)
        if origin_or_none(self.uri) != self._user_origin:
            # A config answer must not redirect our token and headers to another host.
            log.warning("catalog-ext: the catalog's /v1/config names another uri (%s); keeping %s",
                        safe_url(self.uri), self.safe_uri)
            self.uri = self.properties["uri"] = self._user_uri

    def _server_setting(self, url: str) -> str | None:
        """Which `/v1/config` setting gave a URL on `url`'s origin ("oauth2-server-uri from /v1/config
        overrides"), for the refusal's message; None if none did."""
        try:
            wanted = Origin.of(url)
        except ValueError:
            return None
        for part in ("overrides", "defaults"):
            values = self.config_answer.get(part)
            for key, value in (values.items() if isinstance(values, dict) else ()):
                try:
                    if isinstance(value, str) and Origin.of(value) == wanted:
                        return f"{key} from /v1/config {part}"
                except ValueError:
                    continue
        return None

    def _on_response(self, resp: Response, *args: Any, **kwargs: Any) -> None:
        request = resp.request
        if request is None:
            return
        path = request.path_url.split("?")[0]
        if path.endswith("/v1/config") and resp.status_code == 200:
            self._remember_config(resp)
        elif path.endswith("/oauth/tokens") and resp.status_code == 200:
            _register_tokens(resp)
        self._note_date(resp, path)
        history = getattr(getattr(resp.raw, "retries", None), "history", ()) or ()
        key = request.headers.get(IDEMPOTENCY_HEADER)
        exchange = Exchange(operation(request.method or "", path), request.method or "",
                            path + mask_query(urlsplit(request.url or "").query), resp.status_code,
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
    def last_idempotency_key(self) -> str | None:
        """The Idempotency-Key the calling thread's last mutation carried (None if none)."""
        return getattr(self._sent_keys, "last", None)

    def sends_keys(self) -> bool:
        """Whether mutations get an Idempotency-Key: where the catalog advertises a lifetime, unless
        `catalog-ext.commit.idempotency` says always or never."""
        return self.commit_policy.sends_keys(self.idempotency_key_lifetime_s)

    # -- tables: nothing a server or a table writer says names code or aims a credential -----------
    def _response_to_table(self, identifier_tuple: tuple[str, ...], table_response: TableResponse) -> Table:
        table_response = self._without_code_keys(identifier_tuple, table_response)
        io = self._table_io(identifier_tuple, table_response, staged=False)
        return Table(identifier=identifier_tuple, metadata_location=table_response.metadata_location,  # type: ignore[arg-type]
                     metadata=table_response.metadata, io=io, catalog=self, config=table_response.config)

    def _response_to_staged_table(self, identifier_tuple: tuple[str, ...], table_response: TableResponse) -> StagedTable:
        table_response = self._without_code_keys(identifier_tuple, table_response)
        io = self._table_io(identifier_tuple, table_response, staged=True)
        return StagedTable(identifier=identifier_tuple, metadata_location=table_response.metadata_location,  # type: ignore[arg-type]
                           metadata=table_response.metadata, io=io, catalog=self)

    def _without_code_keys(self, identifier: tuple[str, ...], table_response: TableResponse) -> TableResponse:
        """The answer without metadata properties that name code (`write.py-location-provider.impl`):
        any table writer sets them, and PyIceberg would import what they name at the next write."""
        properties = without_code_keys(self.name, ".".join(identifier), table_response.metadata.properties)
        if properties is None:
            return table_response
        metadata = table_response.metadata.model_copy(update={"properties": properties})
        return table_response.model_copy(update={"metadata": metadata})

    def _table_io(self, identifier: tuple[str, ...], table_response: TableResponse, *, staged: bool) -> FileIO:
        """A tool's FileIO for the table (the tools read no data through it): the catalog's properties
        and the allowed keys of the table's config and storage credential, never its metadata
        properties (any table writer sets those). A server-named endpoint of a store the answer vends
        no credential for is dropped, so the user's own keys go only where the user said
        (`GuardedRestCatalog`, whose FileIO reads data, refuses one on the table's own store)."""
        vended = {**table_response.config, **self._resolve_storage_credentials(table_response.storage_credentials,
                                                                               table_response.metadata_location)}
        logsafety.register_secret_properties(vended)
        properties = table_io_properties(self.name, ".".join(identifier), user=self.user_properties,
                                         catalog_properties=self.properties, answer=vended, trust=self.trust, location=None)
        return load_file_io({**properties, **self._auth_manager_property()}, table_response.metadata_location)

    def _auth_manager_property(self) -> dict[str, Any]:
        # As PyIceberg's `_load_file_io` hands it over (its own S3 signer authenticates with it).
        return {AUTH_MANAGER: self._auth_manager} if self._auth_manager else {}

    def _load_file_io(self, properties: Properties = EMPTY_DICT, location: str | None = None) -> FileIO:
        """PyIceberg's, for any other path that builds a FileIO from a table's properties: over the
        catalog's own, only the keys a table answer may set (trust-rules.json's allow-list), so nothing
        names the FileIO's class or anything it loads (`py-io-impl`, ...)."""
        allowed = {k: v for k, v in properties.items() if server_may_set(str(k))}
        return load_file_io({**self.properties, **allowed, **self._auth_manager_property()}, location)

    # -- tool calls: plain data, `errors.py` types -----------------------------------------------
    def namespaces(self, parent: Namespace = ()) -> list[tuple[str, ...]]:
        """Namespaces under `parent` (all pages)."""
        with self._answers("list namespaces", ("namespace", dotted(parent)) if parent else ("warehouse", None)):
            return [tuple(ns) for ns in self.list_namespaces(levels(parent))]

    def tables(self, namespace: Namespace) -> list[tuple[str, ...]]:
        """Identifiers (namespace levels..., name) of the tables in `namespace` (all pages)."""
        with self._answers("list tables", ("namespace", dotted(namespace))):
            return [tuple(t) for t in self.list_tables(levels(namespace))]

    def namespace_properties(self, namespace: Namespace) -> dict[str, str]:
        with self._answers("load namespace", ("namespace", dotted(namespace))):
            return dict(self.load_namespace_properties(levels(namespace)))

    def has_namespace(self, namespace: Namespace) -> bool:
        with self._answers("namespace exists", ("namespace", dotted(namespace))):
            return self.namespace_exists(levels(namespace))

    def has_table(self, identifier: Sequence[str]) -> bool:
        with self._answers("table exists", ("table", dotted(identifier))):
            return self.table_exists(tuple(identifier))

    def make_namespace(self, namespace: Namespace, properties: Mapping[str, str] | None = None) -> None:
        with self._answers("create namespace", ("namespace", dotted(namespace))):
            self.create_namespace(levels(namespace), dict(properties or {}))

    def remove_namespace(self, namespace: Namespace) -> None:
        with self._answers("drop namespace", ("namespace", dotted(namespace))):
            self.drop_namespace(levels(namespace))

    def remove_table(self, identifier: Sequence[str], *, purge: bool = False) -> None:
        with self._answers("drop table", ("table", dotted(identifier))):
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

    # -- internals --------------------------------------------------------------------------------
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
                raise also_pyiceberg(catalog_error(cause.response, what, resource, self.safe_uri, self.warehouse), exc) from None
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
        if request.method in MUTATIONS and not request.path_url.split("?")[0].endswith("/oauth/tokens"):
            if IDEMPOTENCY_HEADER not in request.headers and self._catalog.sends_keys():
                request.headers[IDEMPOTENCY_HEADER] = str(uuid7())
            self._catalog._sent_keys.last = request.headers.get(IDEMPOTENCY_HEADER)
        return request

    def __getattr__(self, name: str) -> Any:  # RestCatalog._refresh_token reads .auth_manager
        return getattr(self.inner, name)


def _register_tokens(resp: Response) -> None:
    """An OAuth2 token answer's tokens: masked by value wherever they appear later."""
    try:
        body = resp.json()
    except ValueError:
        return
    if isinstance(body, dict):
        logsafety.register(str(body[k]) for k in ("access_token", "refresh_token", "id_token") if body.get(k))



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
