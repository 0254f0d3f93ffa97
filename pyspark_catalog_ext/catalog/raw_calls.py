"""Catalog calls PyIceberg has no method for, as raw JSON on the client's own session (`RawCalls`,
a mixin of `rest.CatalogClient`): the load-table answer (cleanup and maintenance read metadata
fields PyIceberg's model drops), stage-create and commit bodies (doctor probes), `/credentials` with
a `storageRefreshToken`, a server-given refresh URL (the trust set's origins only), and any other
route (Polaris's policy API, notifications). Failures are `errors.py`'s one-line types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from pyiceberg.catalog.rest import Endpoints
from requests import Response, Session

from pyspark_catalog_ext.catalog.answers import catalog_error, scrubbed, transport_error
from pyspark_catalog_ext.catalog.storage_keys import REFRESH_ENDPOINT
from pyspark_catalog_ext.catalog.transport import MUTATIONS
from pyspark_catalog_ext.catalog.trust import Origin, TrustedOrigins, origin_or_none
from pyspark_catalog_ext.catalog.urls import safe_url
from pyspark_catalog_ext.errors import CatalogError, ConfigError

__all__ = ["ACCESS_DELEGATION_HEADER", "IDEMPOTENCY_HEADER", "Namespace", "RawCalls", "dotted", "levels"]

ACCESS_DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
IDEMPOTENCY_HEADER = "Idempotency-Key"
Namespace = str | Sequence[str]


class RawCalls:
    """Mixin before PyIceberg's RestCatalog (in `CatalogClient`): the raw calls the module says, sent
    on the catalog's session."""

    uri: str
    safe_uri: str
    warehouse: str | None
    trust: TrustedOrigins
    _session: Session
    _user_origin: Origin | None

    def table_url(self, identifier: Sequence[str], tail: str = "") -> str:
        ident = tuple(identifier)
        if len(ident) < 2 or not ident[-1]:
            raise ConfigError(f"invalid table identifier {'.'.join(ident)!r}: expected namespace.table")
        return self.url(Endpoints.load_table, prefixed=True, **self._split_identifier_for_path(ident)) + tail  # type: ignore[attr-defined]

    def load_table_json(self, identifier: Sequence[str], *, delegation: str | None = None) -> dict[str, Any]:
        """The LoadTableResult as JSON (metadata-location, metadata, config, storage-credentials)."""
        return self._object("GET", self.table_url(identifier), ("table", dotted(identifier)),
                            headers=_delegation(delegation), required=("metadata",))

    def create_table_json(self, namespace: Namespace, body: Mapping[str, Any], *, stage_create: bool = False,
                          delegation: str | None = None) -> dict[str, Any]:
        """POST a CreateTableRequest (`stage-create` when asked); the LoadTableResult as JSON."""
        if not body.get("name") or "schema" not in body:
            raise ConfigError("create_table body needs at least 'name' and 'schema'")
        payload = {**body, "stage-create": True} if stage_create else dict(body)
        url = self.url(Endpoints.create_table, namespace=self._encode_namespace_path(levels(namespace)))  # type: ignore[attr-defined]
        return self._object("POST", url, ("namespace", dotted(namespace)), json=payload,
                            headers=_delegation(delegation), required=("metadata",))

    def commit_table_json(self, identifier: Sequence[str], requirements: Sequence[Mapping[str, Any]],
                          updates: Sequence[Mapping[str, Any]], *, idempotency_key: str | None = None
                          ) -> dict[str, Any]:
        """POST a CommitTableRequest as given (doctor probes); {"metadata-location", "metadata"}."""
        ident = tuple(identifier)
        payload = {"identifier": {"namespace": list(ident[:-1]), "name": ident[-1]},
                   "requirements": list(requirements), "updates": list(updates)}
        headers = {IDEMPOTENCY_HEADER: idempotency_key} if idempotency_key else None
        return self._object("POST", self.table_url(ident), ("table", dotted(ident)), json=payload,
                            headers=headers, required=("metadata-location", "metadata"))

    def load_credentials_json(self, identifier: Sequence[str], *, storage_refresh_token: str | None = None
                              ) -> dict[str, Any]:
        """GET .../credentials[?storageRefreshToken=] (spec PR 15280): {"storage-credentials": [...]}."""
        params = {"storageRefreshToken": storage_refresh_token} if storage_refresh_token else None
        body = self._object("GET", self.table_url(identifier, "/credentials"), ("table", dotted(identifier)),
                            params=params, required=("storage-credentials",))
        if not isinstance(body["storage-credentials"], list):
            raise CatalogError(f"catalog returned malformed JSON for GET {dotted(identifier)} credentials: "
                               "storage-credentials must be a list")
        return body

    def get_url(self, url: str, key: str = REFRESH_ENDPOINT) -> Any:
        """GET a server-given URL (`key`: the setting that gave it), absolute or relative to the
        catalog, on an origin of the trust set only. Another origin is refused before any request
        (`UntrustedOriginError`, a `CatalogError`, so a refresh falls through to the next strategy):
        with credentials it would exfiltrate them, without them it is a request to wherever the
        server points us (blind SSRF)."""
        full = urljoin(self.uri.rstrip("/") + "/", url)
        self.trust.check(full, key)
        return self._call("GET", full, ("endpoint", None))

    def send_to(self, method: str, url: str, *, key: str, json: Any = None) -> Response:
        """Send a request with the catalog's credentials to a server-given absolute URL (`key`: the
        setting that gave it), such as the catalog's S3 signer, and return the answer whatever its
        status. Refused before sending (`UntrustedOriginError`) unless the URL's origin is trusted;
        never redirected. Transport failures are one-line `CatalogError`s."""
        self.trust.check(url, key)
        try:
            return self._session.request(method.upper(), url, json=json)
        except requests.RequestException as exc:
            raise transport_error(exc, f"{method.upper()} {urlsplit(url).path}", safe_url(url),
                                  mutation=method.upper() in MUTATIONS) from None

    def call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
             headers: Mapping[str, str] | None = None) -> Any:
        """Any catalog call (Polaris's `/polaris/v1/{prefix}/...`, notifications). "{prefix}" in `path` is
        the catalog's prefix. Parsed JSON, or None for an empty answer."""
        path = path.replace("/{prefix}", f"/{self.prefix}" if self.prefix else "")  # type: ignore[attr-defined]
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
                raise transport_error(exc, shown, _where(url, self), mutation=method in MUTATIONS) from None
            # An expired token (401; 419 on Gravitino) was not applied: renew it once and resend.
            if resp.status_code in (401, 419) and not renewal and self._renew_token():
                continue
            break
        if resp.status_code >= 400:
            raise scrubbed(catalog_error(resp, shown, resource, self.safe_uri, self.warehouse), resp, params)
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
            self._refresh_token()  # type: ignore[attr-defined]  # PyIceberg's own renewal (its legacy OAuth2 manager; others renew themselves)
        except Exception:
            return False
        return True


def _where(url: str, catalog: RawCalls) -> str:
    return catalog.safe_uri if origin_or_none(url) == catalog._user_origin else safe_url(url)


def levels(namespace: Namespace) -> tuple[str, ...]:
    return (namespace,) if isinstance(namespace, str) else tuple(namespace)


def dotted(identifier: Namespace) -> str:
    return ".".join(levels(identifier))


def _delegation(value: str | None) -> dict[str, str] | None:
    return {ACCESS_DELEGATION_HEADER: value} if value else None
