"""The catalog's S3 request signer, as the PyIceberg FileIOs call it (remote signing).

`RemoteSigner` is the client of Iceberg's REST signer API for one table (`{region, method, uri,
headers, body?}` answered by `{uri, headers}`); `SignerSession` makes them for one catalog.
Where: `signer_target`, from the table's answer, then the catalog's settings, never a table's
metadata properties. To whom: an origin of the catalog's trust set only, checked at load and on
each request; no redirect. With the catalog's own token (a 401 or 419 renews it once). A 403 is
`SigningRefusedError`, never retried. One kept signature per object and method, while the signer
allows it (`Cache-Control: private`) and within its validity minus `SIGNATURE_MARGIN_S`.

Why: docs/signing.md, section 'PyIceberg'.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

import requests

from pyspark_catalog_ext.catalog.storage_keys import (
    S3_REMOTE_SIGNING_ENABLED,
    S3_SIGNER_ENDPOINT,
    S3_SIGNER_URI,
    SIGNER_ENDPOINT,
    SIGNER_URI,
)
from pyspark_catalog_ext.catalog.transport import BoundedAdapter, read_retry
from pyspark_catalog_ext.catalog.trust import TrustedOrigins
from pyspark_catalog_ext.catalog.urls import safe_url
from pyspark_catalog_ext.errors import ConfigError, SignerError, SigningRefusedError

__all__ = ["DEFAULT_ENDPOINT", "RemoteSigner", "Signed", "SignerError", "SignerSession", "SignerTarget",
           "SigningRefusedError", "remote_signing_requested", "signer_target"]

DEFAULT_ENDPOINT = "v1/aws/s3/sign"  # Iceberg's default signer endpoint, relative to the signer URI
SIGNING_CONFIG_FIELD = "remote-signing-config"  # Iceberg 1.12's field of a load-table answer
# (key of the signer's base URI, key of its endpoint), in the order Iceberg reads them: 1.12's names, then 1.10's.
_URI_KEYS = (SIGNER_URI, S3_SIGNER_URI)
_ENDPOINT_KEYS = (SIGNER_ENDPOINT, S3_SIGNER_ENDPOINT)
_TIMEOUT = (5.0, 30.0)
_ATTEMPTS = 3  # a sign request changes nothing in storage: repeating one after a transient failure is safe
# Headers of the signer's answer that are the HTTP client's business (framing, routing), never the signer's.
_NOT_FROM_SIGNER = frozenset({"host", "content-length", "transfer-encoding", "connection", "cache-control"})
# Request headers never shown to the signer: they vary per request (a read's Range and conditions, the
# SDK's ids) and no S3 signature needs them (S3 requires every x-amz-* header to be signed; none of these
# is one; SigV4 signers skip user-agent, expect and x-amzn-trace-id anyway; a condition only narrows
# what the request does). So one signature serves every read of an object.
_PER_REQUEST = frozenset({"range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
                          "amz-sdk-invocation-id", "amz-sdk-request", "user-agent", "expect", "x-amzn-trace-id"})
_CACHED_METHODS = frozenset({"GET", "HEAD"})  # reads: a write's signature covers its own checksum headers anyway
SIGNATURE_LIFETIME_S = 15 * 60  # S3 refuses a header-signed request whose X-Amz-Date is 15 min from its clock
SIGNATURE_MARGIN_S = 5 * 60  # a kept signature is dropped this long before then (clock skew, slow sends)
MAX_KEPT_SIGNATURES = 4096  # per catalog (SignerSession), least recently used dropped first


def remote_signing_requested(table_config: Mapping[str, Any], catalog_properties: Mapping[str, Any],
                             signing_config: Mapping[str, Any] | None) -> bool:
    """Does this table's answer (or the catalog's settings) ask for remote signing? Iceberg Java's
    `s3.remote-signing-enabled`, PyIceberg's `s3.signer`, or 1.12's `remote-signing-config` field.
    The table's config wins over the catalog's settings (as Iceberg merges them)."""
    if signing_config is not None:
        return True
    merged = {**catalog_properties, **table_config}
    if str(merged.get(S3_REMOTE_SIGNING_ENABLED, "")).strip().lower() == "true":
        return True
    signer = merged.get("s3.signer")
    if signer:
        if signer != "S3V4RestSigner":
            raise ConfigError(f"s3.signer={str(signer)[:60]!r} is not a signer this package knows; remote signing "
                              "speaks Iceberg's REST signer API (s3.signer=S3V4RestSigner or s3.remote-signing-enabled=true)")
        return True
    return False


@dataclass(frozen=True)
class SignerTarget:
    """Where one table's S3 requests are signed: `url` (absolute), `key` (the setting that named
    its origin, for errors), `headers` to send with each sign request, and sign-request `properties`
    (Iceberg 1.12's form; None for the older one, which has no such field)."""

    url: str
    key: str
    headers: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] | None = None


def signer_target(table_config: Mapping[str, Any], catalog_properties: Mapping[str, Any],
                  signing_config: Mapping[str, Any] | None, catalog_uri: str, table_route: str) -> SignerTarget:
    """The signer of one table. Each part comes from the first of: the table's config, the answer's
    `remote-signing-config`, the catalog's settings (the user's, then the catalog's `/v1/config`), the
    default (the catalog URI; `table_route` + `/sign` when a signing config is present, else
    `v1/aws/s3/sign`). An absolute endpoint is the whole URL, as in Iceberg."""
    config = signing_config if isinstance(signing_config, Mapping) else {}
    if signing_config is not None and not isinstance(signing_config, Mapping):
        raise ConfigError(f"the catalog's {SIGNING_CONFIG_FIELD} is not a JSON object")
    for part in ("headers", "properties"):
        if not isinstance(config.get(part) or {}, Mapping):
            raise ConfigError(f"the catalog's {SIGNING_CONFIG_FIELD}.{part} is not a JSON object")

    def first(keys: tuple[str, ...], field_name: str, fallback: tuple[str, str]) -> tuple[str, str]:
        for key in keys:
            if table_config.get(key):
                return str(table_config[key]).strip(), key
        if config.get(field_name):
            return str(config[field_name]).strip(), f"{SIGNING_CONFIG_FIELD}.{field_name}"
        for key in keys:
            if catalog_properties.get(key):
                return str(catalog_properties[key]).strip(), key
        return fallback

    base, base_key = first(_URI_KEYS, "base-uri", (catalog_uri, "uri"))
    default_endpoint = f"{table_route.strip('/')}/sign" if signing_config is not None else DEFAULT_ENDPOINT
    endpoint, endpoint_key = first(_ENDPOINT_KEYS, "endpoint-path", (default_endpoint, "signer endpoint"))
    if urlsplit(endpoint).scheme:  # an absolute endpoint names the whole URL (and its origin)
        url, key = endpoint, endpoint_key
    else:
        url, key = f"{base.rstrip('/')}/{endpoint.lstrip('/')}", base_key
    headers: dict[str, str] = {}
    for name, value in (config.get("headers") or {}).items():
        values = value if isinstance(value, list) else [value]
        headers[str(name)] = ", ".join(str(v) for v in values)
    properties = {str(k): str(v) for k, v in (config.get("properties") or {}).items()} if signing_config is not None else None
    return SignerTarget(url, key, headers, properties)


class SignerSession:
    """The signing side of one catalog: its HTTP session (bounded, no redirects), its trust set and
    its credentials, shared by the `RemoteSigner` of each of its tables.

    `auth_header`: the catalog's current Authorization value (None: none); `renew_token`: renew the
    catalog's token, True when it did; `headers`: the user's `header.*` values; `verify`/`cert`: the
    catalog session's TLS settings (its CA bundle, its client certificate), since the signer is the catalog's."""

    def __init__(self, trust: TrustedOrigins, auth_header: Callable[[], str | None], renew_token: Callable[[], bool],
                 headers: Mapping[str, str] | None = None, verify: bool | str = True, cert: Any = None) -> None:
        self.trust = trust
        self._auth_header = auth_header
        self._renew_token = renew_token
        self.headers = dict(headers or {})
        self._renew_lock = threading.Lock()
        retry = read_retry(_ATTEMPTS).new(allowed_methods=frozenset({"POST"}))
        ca_bundle = verify if isinstance(verify, str) else None
        from cachetools import LRUCache, TLRUCache

        # kept signer answers: key -> (answer, monotonic time it must no longer be used at)
        self._kept: TLRUCache = TLRUCache(MAX_KEPT_SIGNATURES, ttu=lambda _k, v, _now: v[1], timer=time.monotonic)
        # the setting that named each signer URL, by the URL as requests sends it (for the adapter's refusals)
        self._url_keys: LRUCache = LRUCache(256)
        self._kept_lock = threading.Lock()  # cachetools caches are not thread-safe
        self.http = requests.Session()
        self.http.verify, self.http.cert = verify, cert
        for scheme in ("http://", "https://"):  # the origin is checked on the URL each request is sent to
            self.http.mount(scheme, BoundedAdapter(_TIMEOUT, retry, ca_bundle, pool_maxsize=32, trust=trust,
                                                   key_of=self._key_of))

    def signer(self, table: str, target: SignerTarget) -> RemoteSigner:
        """The signer of `table`; `UntrustedOriginError` (nothing sent) when its origin is not trusted."""
        self.trust.check(target.url, target.key)
        try:
            sent = requests.Request("POST", target.url).prepare().url or target.url
        except requests.RequestException:
            sent = target.url  # requests cannot send it either
        with self._kept_lock:
            self._url_keys[sent] = target.key
        return RemoteSigner(self, table, target)

    def _key_of(self, url: str) -> str | None:
        with self._kept_lock:
            return self._url_keys.get(url)

    def authorization(self) -> str | None:
        return self._auth_header()

    def renew(self, used: str | None) -> bool:
        """Renew the catalog's token after the signer refused `used`; single-flight: a thread that
        finds it already replaced just signs again with the new one."""
        with self._renew_lock:
            if self._auth_header() != used:
                return True
            return self._renew_token()

    def kept(self, key: tuple) -> Mapping[str, Any] | None:
        with self._kept_lock:
            entry = self._kept.get(key)
        return entry[0] if entry is not None else None

    def keep(self, key: tuple, answer: Mapping[str, Any], until: float) -> None:
        with self._kept_lock:
            self._kept[key] = (answer, until)

    def forget(self, key: tuple) -> None:
        with self._kept_lock:
            self._kept.pop(key, None)

    def close(self) -> None:
        self.http.close()


class Signed(NamedTuple):
    """One signed S3 request: the URL and headers to send, and `kept`, the cache key when the
    signature came from the cache (None when the signer was asked for it)."""

    url: str
    headers: dict[str, str]
    kept: tuple | None = None


class RemoteSigner:
    """Signs one table's S3 requests at its catalog's signer. Thread-safe.

    `requests` / `seconds`: how many requests the signer signed and the time spent asking; `reused`: how
    many requests were sent with a kept signature instead (for measurements)."""

    def __init__(self, session: SignerSession, table: str, target: SignerTarget) -> None:
        self._session = session
        self.table = table
        self.target = target
        self._lock = threading.Lock()
        self.requests = 0
        self.seconds = 0.0
        self.reused = 0

    def __repr__(self) -> str:
        return f"RemoteSigner({self.table!r}, {safe_url(self.target.url)!r})"

    def sign(self, method: str, url: str, headers: Mapping[str, str], region: str,
             body: bytes | str | None = None) -> tuple[str, dict[str, str]]:
        """(the URL to send to, the headers to send) for one S3 request. `body`: a DeleteObjects
        body, which the signer must see to know what is deleted (no other request sends one)."""
        signed = self.signed(method, url, headers, region, body)
        return signed.url, signed.headers

    def kept_signature(self, method: str, url: str, headers: Mapping[str, str], region: str,
                       body: bytes | str | None = None) -> Signed | None:
        """The request signed with a kept signature of this table's signer, or None (none kept)."""
        key = self._key(method, url, headers, body)
        answer = self._session.kept(key) if key is not None else None
        if answer is None:
            return None
        signed_url, signed_headers = _applied(answer, headers, self._shown(method, url))
        with self._lock:
            self.reused += 1
        return Signed(signed_url, signed_headers, key)

    def signed(self, method: str, url: str, headers: Mapping[str, str], region: str,
               body: bytes | str | None = None) -> Signed:
        """`sign`, saying whether the signature was a kept one (`Signed.kept`: hand it to `forget`
        when S3 refuses it)."""
        kept = self.kept_signature(method, url, headers, region, body)
        if kept is not None:
            return kept
        started = time.perf_counter()
        key = self._key(method, url, headers, body)
        asked = {k: v for k, v in headers.items() if k.lower() not in _PER_REQUEST}
        payload: dict[str, Any] = {"region": region, "method": method, "uri": url,
                                   "headers": {k: [v] for k, v in asked.items()}}
        if body is not None:
            payload["body"] = body.decode("utf-8") if isinstance(body, bytes) else body
        if self.target.properties is not None:  # Iceberg 1.12's form
            payload["properties"] = dict(self.target.properties)
            payload["provider"] = "s3"
        answer, cache_control = self._post(payload, method, url)
        signed_url, signed_headers = _applied(answer, headers, self._shown(method, url))
        if key is not None:
            until = _keep_until(answer, cache_control)
            if until is not None:
                self._session.keep(key, answer, until)
        with self._lock:
            self.requests += 1
            self.seconds += time.perf_counter() - started
        return Signed(signed_url, signed_headers)

    def forget(self, key: tuple) -> None:
        """Drop a kept signature (S3 refused it): the next request signs afresh."""
        self._session.forget(key)

    def _key(self, method: str, url: str, headers: Mapping[str, str], body: bytes | str | None) -> tuple | None:
        """The cache key of a read: its table, signer, method, URL and every header the signer sees
        (never another table's, method's or object's); None for what is never kept."""
        if method not in _CACHED_METHODS or body is not None:
            return None
        asked = tuple(sorted((k.lower(), v) for k, v in headers.items() if k.lower() not in _PER_REQUEST))
        return (self.table, self.target.url, method, url, asked)

    def _post(self, payload: Mapping[str, Any], method: str, url: str) -> tuple[Mapping[str, Any], str]:
        """The signer's answer and its Cache-Control."""
        shown = self._shown(method, url)
        data = json.dumps(payload).encode("utf-8")
        for renewed in (False, True):
            token = self._session.authorization()
            headers = {**self._session.headers, **self.target.headers, "Content-Type": "application/json"}
            if token:
                headers["Authorization"] = token
            try:
                # never follow: requests would re-send the POST, token included, to the Location
                resp = self._session.http.post(self.target.url, data=data, headers=headers, allow_redirects=False)
            except requests.RequestException as exc:
                raise SignerError(f"the catalog's signer at {safe_url(self.target.url)} could not be reached to sign "
                                  f"{shown} for table {self.table}: {type(exc).__name__}") from None
            if resp.status_code in (401, 419) and not renewed and self._session.renew(token):
                continue
            break
        if resp.is_redirect or 300 <= resp.status_code < 400:
            target = safe_url(resp.headers.get("Location") or "")
            raise SignerError(f"the catalog's signer answered HTTP {resp.status_code} to the request to sign {shown} for "
                              f"table {self.table}, pointing to {target or 'nowhere'}: redirects are not followed (the "
                              "catalog's token would go with it); set the signer's own URL (s3.signer.uri)",
                              status=resp.status_code)
        if resp.status_code == 403:
            raise SigningRefusedError(f"the catalog's signer refused to sign {shown} for table {self.table} (HTTP 403: "
                                      f"{_reason(resp)}); a table's signer signs only that table's objects", status=403)
        if resp.status_code in (401, 419):
            raise SignerError(f"the catalog's signer refused the catalog's token to sign {shown} for table {self.table} "
                              f"(HTTP {resp.status_code}: {_reason(resp)}), also after renewing it", status=resp.status_code)
        if resp.status_code != 200:
            raise SignerError(f"the catalog's signer failed to sign {shown} for table {self.table} (HTTP "
                              f"{resp.status_code}: {_reason(resp)})", status=resp.status_code)
        try:
            answer = resp.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise SignerError(f"the catalog's signer answered the request to sign {shown} for table {self.table} with "
                              "no JSON object (expected {uri, headers})")
        return answer, resp.headers.get("Cache-Control") or ""

    @staticmethod
    def _shown(method: str, url: str) -> str:
        """The S3 request as errors name it: method, URL without query values, the query's names."""
        try:
            names = [k for k, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]
        except ValueError:
            names = []
        return f"{method} {safe_url(url)}" + (f"?{'&'.join(names)}" if names else "")


def _applied(answer: Mapping[str, Any], sent: Mapping[str, str], shown: str) -> tuple[str, dict[str, str]]:
    """The signer's {uri, headers} applied to a request that had `sent` headers: as Iceberg's client
    does, the request's own headers stay as they were and the signer's are added (a signer cannot
    rewrite what the client sends); framing and routing headers stay the HTTP client's."""
    url, headers = answer.get("uri"), answer.get("headers")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not isinstance(headers, dict):
        raise SignerError(f"the catalog's signer answered the request to sign {shown} with a malformed answer "
                          "(expected {uri: http(s) URL, headers: {name: [values]}})")
    out = dict(sent)
    present = {k.lower() for k in sent}
    for name, value in headers.items():
        if not isinstance(name, str) or name.lower() in _NOT_FROM_SIGNER or name.lower() in present:
            continue
        values = value if isinstance(value, list) else [value]
        out[name] = ", ".join(str(v) for v in values)
    return url, out


def _keep_until(answer: Mapping[str, Any], cache_control: str) -> float | None:
    """Until when (monotonic) a signer's answer may be reused, or None: only when the signer allows it
    (`Cache-Control: private`, not no-store/no-cache; a max-age bounds it too) and until the signature's
    validity minus `SIGNATURE_MARGIN_S`. Its start is the answer's X-Amz-Date (header, or a presigned
    URL's query with its X-Amz-Expires); without one nothing says when it ends, so it is not kept.
    Measured on our clock but never longer than the lifetime from now, so a signer whose clock is
    ahead cannot stretch it."""
    directives = {d.strip().split("=", 1)[0].lower(): d.strip().partition("=")[2] for d in cache_control.split(",")}
    if "private" not in directives or {"no-store", "no-cache"} & directives.keys():
        return None
    query = dict(parse_qsl(urlsplit(str(answer.get("uri") or "")).query))
    headers = {str(k).lower(): v for k, v in (answer.get("headers") or {}).items()}
    date = headers.get("x-amz-date") or query.get("X-Amz-Date")
    lifetime = float(SIGNATURE_LIFETIME_S)
    try:
        if isinstance(date, list):
            date = date[0] if len(date) == 1 else None
        signed_at = datetime.strptime(str(date), "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc).timestamp()
        if "X-Amz-Expires" in query:
            lifetime = min(lifetime, float(query["X-Amz-Expires"]))
        max_age = float(directives["max-age"]) if directives.get("max-age") else lifetime
    except (TypeError, ValueError):
        return None
    left = min(min(signed_at + lifetime - time.time(), lifetime) - SIGNATURE_MARGIN_S, max_age)
    return time.monotonic() + left if left > 0 else None


def _reason(resp: requests.Response) -> str:
    """The signer's one-line reason: an Iceberg error's message, an S3-style message, or the body's start."""
    try:
        body = resp.json()
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(body, dict) and body.get("message"):
            return str(body["message"])[:300]
    except ValueError:
        pass
    text = " ".join((resp.text or "")[:200].split())
    return text or "no reason given"
