"""How every Python call to a catalog is sent: bounded, never redirected, never re-sent blindly.

PyIceberg's `requests` session, as `CatalogClient` hardens it: a default timeout, and urllib3's
`Retry` for reads (GET/HEAD) only, on connection errors, 429 and 502/503/504 with a capped
`Retry-After` (PyIceberg's SigV4 adapter gets the same `read_retry`); a POST whose answer is lost
is reported as possibly applied. No 3xx is followed (`CatalogRedirectError` naming the target).
Every request goes only to an origin of the catalog's trust set (`trust.TrustedOrigins`), checked
where it leaves, whichever code built it; else `UntrustedOriginError`, and nothing is sent.

Why: docs/architecture.md, section 'The Python catalog client'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import requests.adapters
from requests import Response, Session
from urllib3.util.retry import Retry

from pyspark_catalog_ext.catalog.answers import also_pyiceberg
from pyspark_catalog_ext.catalog.trust import TrustedOrigins
from pyspark_catalog_ext.catalog.urls import safe_url
from pyspark_catalog_ext.errors import CatalogRedirectError, ConfigError

__all__ = ["DEFAULT_TIMEOUT", "MUTATIONS", "BoundedAdapter", "check_origin", "guard_sigv4_signing", "follow_no_redirect",
           "read_retry", "refuse_redirect"]

#: Names the setting a refused URL came from ("oauth2-server-uri from /v1/config overrides"), or None.
KeyOf = Callable[[str], "str | None"]

MUTATIONS = frozenset({"POST", "PUT", "DELETE", "PATCH"})
DEFAULT_TIMEOUT = (5.0, 60.0)  # (connect, read) seconds for every call PyIceberg sends without one


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


class BoundedAdapter(requests.adapters.HTTPAdapter):
    """Pooled connections with a default timeout (PyIceberg passes none) and `read_retry`.

    `ca_bundle`: the catalog's own CA (PyIceberg's `ssl.cabundle`), applied here because requests lets
    a REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE variable override a session's `verify` (psf/requests#3829).
    `trust`: the only origins requests may go to (`UntrustedOriginError` before sending otherwise);
    `key_of` names the setting a refused URL came from, for the message."""

    def __init__(self, timeout: tuple[float, float], retries: Retry, ca_bundle: str | None = None,
                 pool_maxsize: int = 16, trust: TrustedOrigins | None = None, key_of: KeyOf | None = None) -> None:
        super().__init__(pool_connections=4, pool_maxsize=pool_maxsize, max_retries=retries)
        self._timeout = timeout
        self._ca_bundle = ca_bundle
        self._trust = trust
        self._key_of = key_of

    def send(self, request: Any, **kwargs: Any) -> Response:  # type: ignore[override]
        check_origin(self._trust, self._key_of, request.url or "")
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self._timeout
        if self._ca_bundle is not None and kwargs.get("verify") is not False:
            kwargs["verify"] = self._ca_bundle
        return super().send(request, **kwargs)


def check_origin(trust: TrustedOrigins | None, key_of: KeyOf | None, url: str) -> None:
    """`UntrustedOriginError` (nothing sent) unless `url` is on an origin of `trust` (None: any)."""
    if trust is not None and not trust.allows(url):
        trust.check(url, key_of(url) if key_of is not None else None)


def follow_no_redirect(session: Session) -> None:
    if refuse_redirect not in session.hooks["response"]:
        session.hooks["response"].append(refuse_redirect)
    # Should the hook ever be bypassed, requests raises TooManyRedirects before sending anything.
    session.max_redirects = 0


def refuse_redirect(resp: Response, *args: Any, **kwargs: Any) -> None:
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
               if method in MUTATIONS else "")
    raise CatalogRedirectError(
        f"catalog answered HTTP {resp.status_code} to {shown}, redirecting to {target}: redirects are not followed "
        f"(they could re-send a commit or carry credentials elsewhere); if that is the catalog's address, set --uri "
        f"(the catalog's uri) to it.{applied}", status=resp.status_code, location=target)


def guard_sigv4_signing(adapter: Any, trust: TrustedOrigins | None = None, key_of: KeyOf | None = None) -> None:
    """Two checks where PyIceberg's SigV4 adapter signs (it is mounted on the catalog URI as a string
    prefix, which `http://host:81` shares with `http://host:8181`): the URL's origin is trusted, and
    AWS credentials exist. Its boto3 session is asked for credentials each time it signs and fails
    with an AttributeError when there are none: checked at that same moment (credentials a test or
    botocore supplies later still count) and said in one line, as an AttributeError too."""
    boto_session = getattr(adapter, "_boto_session", None)  # PyIceberg 0.12's SigV4Adapter
    sign = getattr(adapter, "add_headers", None)
    if boto_session is None or sign is None:
        return

    def add_headers(request: Any, **kwargs: Any) -> None:
        check_origin(trust, key_of, request.url or "")
        if boto_session.get_credentials() is None:
            raise also_pyiceberg(ConfigError(
                "SigV4 signs catalog requests with your AWS credentials and none were found: set "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or run with an instance role"),
                AttributeError("'NoneType' object has no attribute 'get_frozen_credentials'"))
        sign(request, **kwargs)

    adapter.add_headers = add_headers
