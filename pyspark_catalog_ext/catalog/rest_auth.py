"""Authentication strategies for the Iceberg REST catalog client.

Every strategy is a `requests` auth object (it decorates a PreparedRequest), plus:
- `bind(catalog_uri, transport)`: the client hands over its pooled, retrying transport so
  token fetches share connections, retries and evidence with catalog calls;
- `invalidate(request)`: after a 401, drop cached credentials if a fresh fetch could help;
- `describe()`: a secret-free one-liner for reports (`repr()` is secret-free too).

Secrets live in private attributes and never reach `repr`, `str`, logs or exception messages.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urljoin

import requests
import requests.auth

from pyspark_catalog_ext.errors import CatalogAuthError, CatalogError, CatalogUnavailableError, ConfigError, redact

__all__ = [
    "CatalogAuth",
    "NoAuth",
    "BearerToken",
    "BasicAuth",
    "OAuth2ClientCredentials",
    "SigV4",
    "PyIcebergAuth",
    "auth_from_conf",
    "DEFAULT_SCOPE",
    "DEFAULT_TOKEN_PATH",
]

log = logging.getLogger(__name__)

# Iceberg's (Java and PyIceberg) default OAuth2 scope; profiles that need another (polaris) set it.
DEFAULT_SCOPE = "catalog"
DEFAULT_TOKEN_PATH = "v1/oauth/tokens"


class Transport(Protocol):
    """What the catalog client lends to auth strategies for their own HTTP calls."""

    def __call__(
        self, method: str, url: str, *, data: Mapping[str, str], operation: str
    ) -> requests.Response: ...


def _mask(value: str | None) -> str:
    """Show just enough of an identifier to recognise it, never a whole key."""
    if not value:
        return "''"
    return repr(value[:3] + "***")


class CatalogAuth(requests.auth.AuthBase):
    """Base class for auth strategies."""

    kind = "none"

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        self.apply(r)
        return r

    def apply(self, r: requests.PreparedRequest) -> None:
        """Add credentials to an outgoing request."""

    def auth_header(self) -> str | None:
        """The Authorization header value, as PyIceberg's `AuthManager.auth_header()` (None: none, or signed per request)."""
        probe = requests.Request("GET", "http://auth-header.invalid/").prepare()
        self.apply(probe)
        value = probe.headers.get("Authorization")
        return value.decode() if isinstance(value, bytes) else value

    def bind(self, catalog_uri: str, transport: Transport | None = None) -> None:
        """Called by the client once: the catalog base URI and a shared transport."""

    def invalidate(self, request: requests.PreparedRequest | None = None) -> bool:
        """Forget cached credentials after a 401. True when retrying may now succeed."""
        return False

    def describe(self) -> str:
        """Secret-free description for evidence and reports."""
        return self.kind

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    __str__ = __repr__


class NoAuth(CatalogAuth):
    """Send no credentials."""


class BearerToken(CatalogAuth):
    """A static bearer token (`token` catalog property)."""

    kind = "bearer"

    def __init__(self, token: str) -> None:
        if not token:
            raise ConfigError("empty bearer token: pass --token or use --credential id:secret")
        self._token = token

    def apply(self, r: requests.PreparedRequest) -> None:
        r.headers["Authorization"] = f"Bearer {self._token}"

    def __repr__(self) -> str:
        return "BearerToken(token='***')"

    __str__ = __repr__


class BasicAuth(CatalogAuth):
    """HTTP basic auth (`rest.auth.type=basic`)."""

    kind = "basic"

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password

    def apply(self, r: requests.PreparedRequest) -> None:
        r.headers["Authorization"] = requests.auth._basic_auth_str(self._username, self._password)

    def describe(self) -> str:
        return f"basic user={_mask(self._username)}"

    def __repr__(self) -> str:
        return f"BasicAuth(username={_mask(self._username)}, password='***')"

    __str__ = __repr__


class OAuth2ClientCredentials(CatalogAuth):
    """OAuth2 client-credentials flow (Iceberg's `credential=id:secret`), with a token cache.

    The token is fetched on first use and re-fetched ahead of `expires_in` (by
    `refresh_margin` seconds, at most half the lifetime). Thread-safe and single-flight: one
    thread fetches while the others keep using a still-valid token, or wait if there is none.
    If an early refresh fails while the old token is still valid, the old token stays in use.
    """

    kind = "oauth2"

    def __init__(
        self,
        client_id: str | None,
        client_secret: str,
        token_uri: str | None = None,
        scope: str | None = DEFAULT_SCOPE,
        *,
        refresh_margin: float = 300.0,
        extra_params: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        timeout: float | tuple[float, float] = (5.0, 30.0),
    ) -> None:
        if not client_secret:
            raise ConfigError("OAuth2 needs a client secret: pass --credential client_id:client_secret")
        self._client_id = client_id or None
        self._client_secret = client_secret
        self._token_uri = token_uri
        self.scope = scope
        self.refresh_margin = refresh_margin
        self._extra = dict(extra_params or {})
        self._clock = clock
        self._timeout = timeout
        self._transport: Transport | None = None
        self._own_session: requests.Session | None = None
        self._cond = threading.Condition()
        self._token: str | None = None
        self._refresh_at = 0.0
        self._expires_at = 0.0
        self._refreshing = False
        #: Number of token fetches that succeeded (evidence and tests).
        self.fetch_count = 0

    # -- wiring -------------------------------------------------------------------------
    def bind(self, catalog_uri: str, transport: Transport | None = None) -> None:
        base = catalog_uri.rstrip("/") + "/"
        if self._token_uri is None:
            self._token_uri = urljoin(base, DEFAULT_TOKEN_PATH)
        elif "://" not in self._token_uri:
            # Iceberg allows `oauth2-server-uri` relative to the catalog URI.
            self._token_uri = urljoin(base, self._token_uri.lstrip("/"))
        if transport is not None:
            self._transport = transport

    @property
    def token_uri(self) -> str | None:
        return self._token_uri

    # -- requests hook ------------------------------------------------------------------
    def apply(self, r: requests.PreparedRequest) -> None:
        r.headers["Authorization"] = f"Bearer {self.token()}"

    def token(self) -> str:
        """The current access token, fetching or refreshing it when due."""
        with self._cond:
            while True:
                now = self._clock()
                if self._token is not None and now < self._refresh_at:
                    return self._token
                if self._refreshing:
                    if self._token is not None and now < self._expires_at:
                        return self._token  # someone else is refreshing; ours still works
                    self._cond.wait(timeout=1.0)
                    continue
                self._refreshing = True
                break
        try:
            token, lifetime = self._fetch()
        except BaseException as exc:
            with self._cond:
                self._refreshing = False
                self._cond.notify_all()
                if (
                    isinstance(exc, CatalogError)
                    and self._token is not None
                    and self._clock() < self._expires_at
                ):
                    log.warning("OAuth2 token refresh failed (%s); the current token is still valid, keeping it",
                                type(exc).__name__)
                    return self._token
            raise
        with self._cond:
            now = self._clock()
            self._token = token
            if lifetime is None:
                # No expiry given: keep it until a 401 invalidates it.
                self._refresh_at = self._expires_at = float("inf")
            else:
                margin = min(self.refresh_margin, lifetime / 2.0)
                self._expires_at = now + lifetime
                self._refresh_at = now + lifetime - margin
            self._refreshing = False
            self.fetch_count += 1
            self._cond.notify_all()
            return token

    def invalidate(self, request: requests.PreparedRequest | None = None) -> bool:
        with self._cond:
            if self._token is None:
                return True
            sent = request.headers.get("Authorization") if request is not None else None
            # Only drop the token that was actually rejected: another thread may already have
            # replaced it, and dropping the new one would start a refresh stampede.
            if sent is None or sent == f"Bearer {self._token}":
                self._token = None
                self._refresh_at = self._expires_at = 0.0
            return True

    # -- token endpoint -----------------------------------------------------------------
    def _fetch(self) -> tuple[str, float | None]:
        if self._token_uri is None:
            raise ConfigError("OAuth2 token URI unknown: set oauth2-server-uri or use it through CatalogClient")
        form = {"grant_type": "client_credentials", "client_secret": self._client_secret}
        if self._client_id:
            form["client_id"] = self._client_id
        if self.scope:
            form["scope"] = self.scope
        form.update(self._extra)
        where = _safe_url(self._token_uri)
        if self._transport is not None:
            resp = self._transport("POST", self._token_uri, data=form, operation="oauth2 token")
        else:
            resp = self._standalone_post(form)
        if resp.status_code in (400, 401, 403):
            err, desc = _oauth_error(resp)
            desc = desc.replace(self._client_secret, "***")
            raise CatalogAuthError(
                f"catalog token endpoint {where} rejected the client credentials "
                f"({resp.status_code} {err}: {desc}): check --credential client_id:client_secret and --scope",
                status=resp.status_code,
            )
        if resp.status_code == 404:
            raise CatalogAuthError(
                f"catalog has no OAuth2 token endpoint at {where} (404): set oauth2-server-uri or use --token",
                status=404,
            )
        if resp.status_code >= 300:
            err, desc = _oauth_error(resp)
            desc = desc.replace(self._client_secret, "***")
            cls = CatalogUnavailableError if resp.status_code >= 500 or resp.status_code == 429 else CatalogAuthError
            raise cls(f"catalog token endpoint {where} failed ({resp.status_code} {err}: {desc})", status=resp.status_code)
        try:
            body = resp.json()
        except ValueError as exc:
            raise CatalogError(f"catalog returned malformed JSON for POST {where}: {exc}", status=resp.status_code) from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise CatalogError(
                f"catalog returned malformed JSON for POST {where}: no access_token in the token response",
                status=resp.status_code,
            )
        token_type = str(body.get("token_type", "bearer")).lower()
        if token_type not in ("bearer", "n_a"):
            raise CatalogError(f"catalog token endpoint {where} returned token_type {token_type!r}, expected bearer")
        lifetime = body.get("expires_in")
        try:
            lifetime = float(lifetime) if lifetime is not None else None
        except (TypeError, ValueError):
            lifetime = None
        return token, lifetime

    def _standalone_post(self, form: Mapping[str, str]) -> requests.Response:
        # Used only when the strategy is used outside a CatalogClient (one attempt, no retry).
        if self._own_session is None:
            self._own_session = requests.Session()
        assert self._token_uri is not None
        try:
            return self._own_session.post(self._token_uri, data=form, timeout=self._timeout)
        except requests.exceptions.SSLError:
            raise CatalogError(
                f"TLS handshake with {_safe_url(self._token_uri)} failed: check the CA bundle (REQUESTS_CA_BUNDLE) "
                "or the server certificate"
            ) from None
        except requests.exceptions.RequestException as exc:
            raise CatalogUnavailableError(
                f"cannot reach catalog token endpoint {_safe_url(self._token_uri)} ({type(exc).__name__})"
            ) from None

    def describe(self) -> str:
        return f"oauth2 client_id={_mask(self._client_id)} scope={self.scope!r} token_uri={_safe_url(self._token_uri or '')}"

    def __repr__(self) -> str:
        return (
            f"OAuth2ClientCredentials(client_id={_mask(self._client_id)}, client_secret='***', "
            f"token_uri={_safe_url(self._token_uri or '')!r}, scope={self.scope!r})"
        )

    __str__ = __repr__


class PyIcebergAuth(CatalogAuth):
    """Any PyIceberg `AuthManager` (legacy OAuth2, `auth.type` oauth2/basic/google/custom...) as a CatalogAuth.

    The refresh requests of a PyIceberg catalog then authenticate exactly as the catalog does,
    sharing its token cache: a user's PyIceberg auth configuration works unchanged.
    """

    kind = "pyiceberg"

    def __init__(self, manager: Any, on_401: Callable[[], None] | None = None) -> None:
        self._manager = manager
        self._on_401 = on_401

    def apply(self, r: requests.PreparedRequest) -> None:
        header = self._manager.auth_header() if self._manager is not None else None
        if header:
            r.headers["Authorization"] = header

    def invalidate(self, request: requests.PreparedRequest | None = None) -> bool:
        if self._on_401 is None:
            return False
        self._on_401()  # e.g. RestCatalog._refresh_token: a new OAuth2 token
        return True

    def describe(self) -> str:
        return f"pyiceberg {type(self._manager).__name__}"

    def __repr__(self) -> str:
        return f"PyIcebergAuth({type(self._manager).__name__})"

    __str__ = __repr__


class SigV4(CatalogAuth):
    """AWS SigV4 request signing (`rest.sigv4-enabled=true`), via botocore's SigV4Auth.

    Like Iceberg's RESTSigV4Signer, the payload hash goes in `X-Amz-Content-SHA256` and is
    signed; servers with S3-style verification (SeaweedFS, S3 Tables) need it for bodies.
    Credentials come from `credentials` (botocore Credentials), else a boto3/botocore
    `session`, else the default AWS chain; refreshable credentials are re-read on each request.
    """

    kind = "sigv4"
    # Headers worth signing; hop-by-hop ones (Connection, Accept-Encoding...) may be rewritten
    # by proxies and would break the signature.
    _SIGNED = ("content-type", "idempotency-key", "x-iceberg-access-delegation", "content-md5")

    def __init__(
        self,
        region: str,
        signing_name: str = "execute-api",
        session: Any = None,
        credentials: Any = None,
    ) -> None:
        if not region:
            raise ConfigError("SigV4 needs a region: set rest.signing-region")
        self.region = region
        self.signing_name = signing_name or "execute-api"
        self._session = session
        self._credentials = credentials
        self._lock = threading.Lock()

    def _resolve(self) -> Any:
        with self._lock:
            if self._credentials is None:
                session = self._session
                if session is None:
                    import boto3

                    session = boto3.Session()
                self._credentials = session.get_credentials()
            if self._credentials is None:
                raise CatalogAuthError(
                    "SigV4 signing needs AWS credentials and none were found: set rest.access-key-id/"
                    "rest.secret-access-key or configure an AWS profile"
                )
            return self._credentials

    def apply(self, r: requests.PreparedRequest) -> None:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        creds = self._resolve()
        frozen = creds.get_frozen_credentials() if hasattr(creds, "get_frozen_credentials") else creds
        body: Any = r.body or b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = {k: v for k, v in r.headers.items() if k.lower() in self._SIGNED}
        headers["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
        aws = AWSRequest(method=r.method, url=r.url, data=body, headers=headers)
        SigV4Auth(frozen, self.signing_name, self.region).add_auth(aws)
        r.headers.pop("Authorization", None)
        for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token", "X-Amz-Content-SHA256"):
            if name in aws.headers:
                r.headers[name] = aws.headers[name]

    def describe(self) -> str:
        return f"sigv4 region={self.region} signing-name={self.signing_name}"

    def __repr__(self) -> str:
        return f"SigV4(region={self.region!r}, signing_name={self.signing_name!r}, credentials='***')"

    __str__ = __repr__


def _safe_url(url: str) -> str:
    """A URL without userinfo and without query (query strings may carry secrets)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.hostname or ""
    if parts.hostname and ":" in parts.hostname:
        netloc = f"[{parts.hostname}]"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _oauth_error(resp: requests.Response) -> tuple[str, str]:
    """(error, description) from an OAuth2 error body, or a Iceberg ErrorModel, redacted."""
    try:
        body = resp.json()
    except ValueError:
        text = " ".join(resp.text.split())[:200]
        return (resp.reason or "error"), redact(text) or "no body"
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):  # Iceberg ErrorModel
            return str(err.get("type") or "error"), redact(str(err.get("message") or ""))
        return str(err or "error"), redact(str(body.get("error_description") or ""))
    return "error", "unexpected body"


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def auth_from_conf(props: Mapping[str, Any]) -> CatalogAuth:
    """Build an auth strategy from Iceberg-style catalog properties.

    Understands `rest.auth.type` (none, oauth2, bearer, basic, sigv4), `rest.sigv4-enabled`,
    `rest.signing-name`, `rest.signing-region` (falls back to `client.region`), SigV4 keys
    `rest.access-key-id` / `rest.secret-access-key` / `rest.session-token`, `token`,
    `credential` ("client_id:client_secret", or just a secret), `oauth2-server-uri`, `scope`.
    Without `rest.auth.type`: SigV4 if enabled, else a token, else OAuth2 if a credential is
    given, else no auth.
    """
    p = {str(k): v for k, v in props.items() if v is not None}
    kind = str(p.get("rest.auth.type", "")).strip().lower()
    if not kind:
        if _truthy(p.get("rest.sigv4-enabled", "false")):
            kind = "sigv4"
        elif p.get("token"):
            kind = "bearer"
        elif p.get("credential"):
            kind = "oauth2"
        else:
            kind = "none"

    if kind == "none":
        return NoAuth()
    if kind == "sigv4":
        region = p.get("rest.signing-region") or p.get("client.region") or p.get("s3.region")
        if not region:
            raise ConfigError("SigV4 auth needs a region: set rest.signing-region")
        credentials = None
        if p.get("rest.access-key-id") or p.get("rest.secret-access-key"):
            if not (p.get("rest.access-key-id") and p.get("rest.secret-access-key")):
                raise ConfigError("SigV4 auth needs both rest.access-key-id and rest.secret-access-key")
            from botocore.credentials import Credentials

            credentials = Credentials(
                p["rest.access-key-id"], p["rest.secret-access-key"], p.get("rest.session-token") or None
            )
        return SigV4(str(region), str(p.get("rest.signing-name") or "execute-api"), credentials=credentials)
    if kind in ("bearer", "oauth2"):
        if p.get("token"):
            return BearerToken(str(p["token"]))
        credential = str(p.get("credential") or "")
        if not credential:
            raise ConfigError(f"rest.auth.type={kind} needs token or credential=client_id:client_secret")
        client_id, sep, secret = credential.partition(":")
        if not sep:  # Iceberg: a credential without ':' is a bare client secret
            client_id, secret = "", credential
        return OAuth2ClientCredentials(
            client_id or None,
            secret,
            token_uri=p.get("oauth2-server-uri") or None,
            scope=str(p.get("scope") or DEFAULT_SCOPE),
        )
    if kind == "basic":
        user = p.get("rest.auth.basic.username")
        password = p.get("rest.auth.basic.password")
        if not user or password is None:
            raise ConfigError("basic auth needs rest.auth.basic.username and rest.auth.basic.password")
        return BasicAuth(str(user), str(password))
    raise ConfigError(f"unsupported rest.auth.type {kind!r}: use none, oauth2, bearer, basic or sigv4")
