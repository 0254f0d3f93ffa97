"""A quick preflight of a catalog before a Spark session is built: reachable, credentials
accepted, warehouse exists (one-line errors instead of a JVM stack trace at the first query)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark_catalog_ext.errors import CatalogAuthError, CatalogError, CatalogNotFoundError, CatalogUnavailableError
from pyspark_catalog_ext.spark.conf import CatalogSparkConf

__all__ = ["check_catalog"]


def check_catalog(conf: Mapping[str, str], catalog: str = "lake", timeout: float = 10.0) -> dict[str, Any]:
    """Probe the catalog behind `conf`: reachable, credentials accepted, warehouse exists.

    Raises CatalogUnavailableError / CatalogAuthError / CatalogNotFoundError with a one-line
    message; returns the `/v1/config` answer. SigV4 catalogs are only checked for reachability.
    """
    import requests

    props = CatalogSparkConf(conf).catalog(catalog) if any(k.startswith("spark.") for k in conf) else dict(conf)
    uri = props.get("uri", "")
    warehouse = props.get("warehouse")
    headers = {k[len("header."):]: v for k, v in props.items() if k.startswith("header.")}

    def call(method: str, url: str, **kw: Any) -> requests.Response:
        try:
            return requests.request(method, url, timeout=timeout, **kw)
        except requests.RequestException as exc:
            raise CatalogUnavailableError(f"cannot reach the catalog at {uri} ({type(exc).__name__}); start it (pyspark-catalog-ext local up) or fix the uri") from None

    def fail(resp: requests.Response, what: str) -> None:
        if resp.status_code in (401, 403):
            raise CatalogAuthError(f"the catalog at {uri} rejected the credentials on {what} (HTTP {resp.status_code}); check --credential/--token", resp.status_code)
        if resp.status_code >= 500 or resp.status_code == 429:
            raise CatalogUnavailableError(f"the catalog at {uri} answered HTTP {resp.status_code} on {what}; retry later or check the server logs", resp.status_code)
        raise CatalogError(f"the catalog at {uri} answered HTTP {resp.status_code} on {what}; check the uri and warehouse", resp.status_code)

    if props.get("rest.auth.type") == "sigv4":
        call("GET", f"{uri}/v1/config", params={"warehouse": warehouse} if warehouse else None)
        return {}
    if props.get("credential"):
        client_id, _, secret = props["credential"].partition(":")
        resp = call("POST", props.get("oauth2-server-uri", f"{uri}/v1/oauth/tokens"), data={
            "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": props.get("scope", "catalog")})
        if resp.status_code != 200:
            fail(resp, "the OAuth2 token request")
        headers["Authorization"] = f"Bearer {resp.json().get('access_token', '')}"
    elif props.get("token"):
        headers["Authorization"] = f"Bearer {props['token']}"
    resp = call("GET", f"{uri}/v1/config", params={"warehouse": warehouse} if warehouse else None, headers=headers)
    if resp.status_code != 200:
        fail(resp, "GET /v1/config")
    config = resp.json()
    prefix = (config.get("overrides") or {}).get("prefix") or (config.get("defaults") or {}).get("prefix")
    # Some servers (SeaweedFS) answer /v1/config for any warehouse: listing namespaces tells the truth.
    ns_url = f"{uri}/v1/{prefix}/namespaces" if prefix else f"{uri}/v1/namespaces"
    resp = call("GET", ns_url, headers=headers)
    if resp.status_code == 404:
        raise CatalogNotFoundError(f"warehouse {warehouse!r} not found at {uri} (HTTP 404 listing namespaces); check --warehouse (SeaweedFS: the table bucket name)", 404)
    if resp.status_code != 200:
        fail(resp, "listing namespaces")
    return config
