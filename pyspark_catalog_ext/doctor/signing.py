"""The doctor's remote-signing check: ask the catalog's signer to sign a real S3 request for an
object of the probe table (its metadata file), send it to S3, and ask for signatures a scoped
signer must refuse: a GET outside the table, a cross-table copy (a PUT inside the table whose
`x-amz-copy-source` is outside it) and a DeleteObjects whose body names a key outside the table.
Those three are only asked for, never sent.

The sign requests carry the catalog's token, so they go through the catalog client's session
(`CatalogClient.send_to`): a signer URL on an origin outside the catalog's trust set (a table
answer's `s3.signer.uri`, or an absolute `s3.signer.endpoint`, which Iceberg's HTTP client takes as
the whole URL) is refused before anything is sent, and the probe says so."""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import requests

from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SIGNER_ENDPOINT,
    S3_SIGNER_URI,
)
from pyspark_catalog_ext.errors import UntrustedOriginError
from pyspark_catalog_ext.lakehouse.signer import SIGN_ENDPOINT

if TYPE_CHECKING:  # the client's type only: importing it here would import PyIceberg with this module
    from pyspark_catalog_ext.catalog.rest import CatalogClient

__all__ = ["signed_request_check", "object_url", "scope_failure", "sign_url"]


def _region(config: Mapping[str, str]) -> str:
    """The region Iceberg's Java S3FileIO signs for: client.region, then s3.region, else us-east-1."""
    return config.get(CLIENT_REGION) or config.get(S3_REGION) or "us-east-1"


def object_url(location: str, config: Mapping[str, str]) -> str | None:
    """The HTTP URL S3FileIO would use for `s3://bucket/key` under `config`, or None."""
    parts = urlsplit(location)
    if parts.scheme not in ("s3", "s3a", "s3n") or not parts.netloc:
        return None
    bucket, key = parts.netloc, quote(parts.path.lstrip("/"))
    endpoint = config.get(S3_ENDPOINT)
    region = _region(config)
    if not endpoint:
        return f"https://{bucket}.s3.{region}.amazonaws.com/{key}"
    if str(config.get(S3_PATH_STYLE_ACCESS, "")).lower() == "true":
        return f"{endpoint.rstrip('/')}/{bucket}/{key}"
    ep = urlsplit(endpoint)
    return f"{ep.scheme}://{bucket}.{ep.netloc}/{key}"


def sign_url(config: Mapping[str, str]) -> tuple[str, str] | None:
    """(URL, the setting it came from) where Iceberg's S3 signer client POSTs sign requests: the
    `s3.signer.endpoint` itself when absolute (Iceberg's HTTP client takes an absolute path as the
    whole URL), else it under `s3.signer.uri` (default: the catalog `uri`); None without either."""
    endpoint = str(config.get(S3_SIGNER_ENDPOINT) or SIGN_ENDPOINT)
    if urlsplit(endpoint).scheme:
        return endpoint, S3_SIGNER_ENDPOINT
    key = S3_SIGNER_URI if config.get(S3_SIGNER_URI) else "uri"
    signer = str(config.get(key) or "").rstrip("/")
    return (f"{signer}/{endpoint.lstrip('/')}", key) if signer else None


def signed_request_check(config: Mapping[str, str], metadata_location: str, table_location: str, client: CatalogClient,
                         timeout: float = 20.0, scrub: Callable[[str], str] = str) -> dict[str, Any]:
    """Evidence of one real signed GET (and one signature request outside the table). No secrets:
    only statuses, URLs and header names. A signer outside the catalog's trust set is never asked:
    `refused` then holds the one-line reason."""
    where = sign_url(config)
    url = object_url(metadata_location, config)
    evidence: dict[str, Any] = {"signer_endpoint": scrub(where[0]) if where else None, "object": scrub(url or metadata_location)}
    if where is None or not url:
        evidence["error"] = "no signer URI or no S3 URL for the metadata file"
        return evidence
    signer_url, key = where
    region = _region(config)
    try:
        client.trust.check(signer_url, key)
    except UntrustedOriginError as exc:
        evidence["refused"] = str(exc)
        return evidence

    def sign(target: str, method: str = "GET", headers: Mapping[str, str] | None = None, body: str | None = None) -> requests.Response:
        request: dict[str, Any] = {"region": region, "method": method, "uri": target, "headers": {k: [v] for k, v in (headers or {}).items()}}
        if body is not None:
            request["body"] = body
        return client.send_to("POST", signer_url, key=key, json=request)

    evidence.update(_refusal_checks(sign, table_location, config))
    resp = sign(url)
    evidence["sign_status"] = resp.status_code
    if resp.status_code != 200:
        evidence["error"] = scrub(resp.text[:200])
        return evidence
    answer = resp.json()
    headers = {k: (v[0] if isinstance(v, list) else v) for k, v in (answer.get("headers") or {}).items()}
    evidence["signed_headers"] = sorted(headers)
    s3 = requests.get(answer.get("uri") or url, headers=headers, timeout=timeout, allow_redirects=False)
    evidence["s3_status"] = s3.status_code
    # Outside the table: a sibling of its location (never created, so nothing is read either way).
    outside = object_url(table_location.rstrip("/") + f"-pce-doctor-{_secrets.token_hex(3)}/x", config)
    if outside:
        evidence["outside_sign_status"] = sign(outside).status_code
    return evidence


def _refusal_checks(sign: Callable[..., requests.Response], table_location: str, config: Mapping[str, str]) -> dict[str, Any]:
    """Statuses of the cross-table copy and the outside DeleteObjects sign requests (never sent to S3)."""
    parts = urlsplit(table_location)
    if parts.scheme not in ("s3", "s3a", "s3n") or not parts.netloc:
        return {}
    bucket, prefix = parts.netloc, parts.path.strip("/")
    elsewhere = f"{prefix}-pce-doctor-{_secrets.token_hex(3)}/data/x.parquet"  # a sibling of the table, never created
    out: dict[str, Any] = {}
    target = object_url(f"{table_location.rstrip('/')}/data/pce-doctor-copy-{_secrets.token_hex(3)}.parquet", config)
    if target:
        out["copy_sign_status"] = sign(target, "PUT", {"x-amz-copy-source": f"/{bucket}/{quote(elsewhere)}"}).status_code
    bucket_url = object_url(f"s3://{bucket}/x", config)
    if bucket_url:
        xml = f"<Delete><Object><Key>{elsewhere}</Key></Object></Delete>"
        out["delete_outside_sign_status"] = sign(bucket_url.rsplit("/", 1)[0] + "?delete", "POST", {"Content-Type": "application/xml"}, xml).status_code
    return out


def scope_failure(check: Mapping[str, Any]) -> str | None:
    """Why the evidence of `signed_request_check` shows a signer that signs beyond its table, or None."""
    if check.get("copy_sign_status") == 200:
        return ("the signer signs a cross-table copy (a PUT inside the table with x-amz-copy-source outside it): "
                "any token holder can copy another table's data into this one and read it; refuse x-amz-copy-source in the signer")
    if check.get("delete_outside_sign_status") == 200:
        return ("the signer signs a DeleteObjects whose body names a key outside the table: "
                "the signer must check the body's keys and bind the body to what it signs")
    return None
