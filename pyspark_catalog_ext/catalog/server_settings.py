"""What a catalog's answers may set, applied where they are merged: an allow-list, never a deny-list.

- `/v1/config` (`config_properties`): the user's properties plus only the keys
  `trust_rules.server_may_set(config=True)` allows; any other server value is dropped.
- A table answer (`table_io_properties`): the catalog's properties plus only the storage keys a
  catalog may vend; no answer names code, a proxy or a `catalog-ext.*` knob.
- Credentials the catalog did not issue go only to storage endpoints the user configured or trusts.
- Table metadata properties are data: `without_code_keys` removes those that name a class.

Why: docs/security.md, section 'What a server may set'.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from pyspark_catalog_ext import events
from pyspark_catalog_ext.catalog.storage_keys import (
    ADLS_REFRESH_ENDPOINT,
    ADLS_SAS,
    GCS_REFRESH_ENDPOINT,
    GCS_TOKEN,
    REFRESH_ENDPOINT,
    S3_ACCESS_KEY_ID,
)
from pyspark_catalog_ext.catalog.trust import TRUSTED_ORIGINS_KNOB, Origin, TrustedOrigins
from pyspark_catalog_ext.catalog.trust_rules import is_metadata_code_key, server_may_set, store_of_endpoint_key
from pyspark_catalog_ext.errors import UntrustedOriginError

__all__ = ["config_properties", "issued_stores", "table_io_properties", "vended_stores", "without_code_keys"]

log = logging.getLogger(__name__)

_STORE_OF_SCHEME = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs",
                    "abfs": "adls", "abfss": "adls", "wasb": "adls", "wasbs": "adls"}
_STORE_NAMES = {"s3": "S3", "gcs": "GCS", "adls": "ADLS"}
# An absolute URL begins with its scheme (RFC 3986), as the JVM's Origin.isAbsolute reads it: a
# connection string's "BlobEndpoint=http://..." does not.
_ABSOLUTE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def config_properties(catalog: str, user: Mapping[str, Any], merged: Mapping[str, Any]) -> dict[str, Any]:
    """The catalog's properties after `/v1/config`: `merged` (PyIceberg's merge of the answer's
    defaults, the user's properties and its overrides) with each server value the allow-list does not
    cover replaced by the user's, or dropped."""
    out: dict[str, Any] = {}
    dropped = []
    for key, value in merged.items():
        if key in user and user[key] == value:
            out[key] = value
        elif server_may_set(str(key), config=True):
            out[key] = value
        else:
            dropped.append(str(key))
            if key in user:
                out[key] = user[key]
    _report_dropped(catalog, "/v1/config", dropped)
    return out


def issued_stores(answer: Mapping[str, Any]) -> set[str]:
    """The stores for which `answer` (a table answer's server-set keys) vends a credential or names
    where the catalog renews it (a refresh endpoint). The JVM's twin: `session/ServerEndpoints.java`."""
    out = set()
    if answer.get(S3_ACCESS_KEY_ID) or answer.get(REFRESH_ENDPOINT):
        out.add("s3")
    if answer.get(GCS_TOKEN) or answer.get(GCS_REFRESH_ENDPOINT):
        out.add("gcs")
    if answer.get(ADLS_REFRESH_ENDPOINT) or any(
            str(k).startswith(ADLS_SAS) and v for k, v in answer.items()):
        out.add("adls")
    return out


def vended_stores(answer: Mapping[str, Any]) -> set[str]:
    """The stores for which `answer` holds a credential the catalog vends (an S3 key, a GCS token, an ADLS SAS)."""
    return issued_stores({k: v for k, v in answer.items()
                          if k not in (REFRESH_ENDPOINT, GCS_REFRESH_ENDPOINT, ADLS_REFRESH_ENDPOINT)})


def table_io_properties(catalog: str, table: str, *, user: Mapping[str, Any], catalog_properties: Mapping[str, Any],
                        answer: Mapping[str, Any], trust: TrustedOrigins, location: str | None,
                        signed: bool = False) -> dict[str, Any]:
    """The properties of a table's FileIO: the catalog's (the user's, plus what `/v1/config` may set)
    and, over them, the allowed keys of the table's `answer` (its config merged with the chosen
    storage credential). A server-named endpoint of a store whose credentials the catalog did not
    vend in `answer` (a refresh endpoint alone vends none; `signed`: S3 requests are signed by the
    catalog's signer) is dropped, the user's own setting of the key kept (trust-rules.json: "the
    user's value, or none, stays"), and refused when `location` is on that store
    (UntrustedOriginError, one line naming the key, the origin and the setting that trusts it)."""
    server = {str(k): v for k, v in answer.items() if server_may_set(str(k))}
    _report_dropped(catalog, f"table {table}'s answer", [str(k) for k in answer if str(k) not in server])
    merged = {**catalog_properties, **server}
    # Only a credential in the answer issues a store here: PyIceberg's FileIOs never fetch from a refresh
    # endpoint, and `GuardedRestCatalog` renews only what an answer vended, so with a refresh endpoint
    # alone the FileIO holds the user's own (or the machine's) credentials. The shim's `issued_stores`
    # twin counts the endpoint, since Iceberg's own FileIOs fetch from it with the catalog's login.
    # A remote-signed table's S3 requests carry only the catalog's signer's signatures, no key of ours.
    issued = vended_stores(server) | ({"s3"} if signed else set())
    table_store = _STORE_OF_SCHEME.get(urlsplit(location or "").scheme.lower())
    endpoints = {k: store for k in merged if (store := store_of_endpoint_key(k))}
    for key, store in endpoints.items():
        if store in issued or (key in user and user[key] == merged[key]):
            continue
        problem = _untrusted_endpoint(key, store, merged, user, trust)
        if problem is None:
            continue
        if key in user:
            merged[key] = user[key]  # the user's own endpoint, where the user's own keys go
        else:
            del merged[key]
        if store == table_store:
            raise UntrustedOriginError(
                f"table {table}: the catalog names {key}={problem} but vends no {_STORE_NAMES[store]} credential, and "
                f"your own {_STORE_NAMES[store]} credentials go only to endpoints you configured; if you trust "
                f"{problem}, set {key} yourself or add it to {TRUSTED_ORIGINS_KNOB}", origin=problem, key=key)
        _report_dropped(catalog, f"table {table}'s answer", [key])
    return merged


def without_code_keys(catalog: str, table: str, properties: Mapping[str, str]) -> dict[str, str] | None:
    """`properties` (table metadata) without the keys that name code, or None when it has none."""
    named = [k for k in properties if is_metadata_code_key(k)]
    if not named:
        return None
    log.warning("catalog-ext: table %s: ignoring metadata propert%s %s: a table's properties never name code a "
                "client loads", table, "y" if len(named) == 1 else "ies", ", ".join(sorted(named)))
    events.emit("answer.keys-dropped", catalog=catalog, answer=f"table {table}'s metadata properties",
                keys=sorted(named))
    return {k: v for k, v in properties.items() if k not in named}


def _untrusted_endpoint(key: str, store: str, merged: Mapping[str, Any], user: Mapping[str, Any],
                        trust: TrustedOrigins) -> str | None:
    """None when every URL `key` (an endpoint of `store`) names in `merged` is on a trusted origin
    (the trust set, or an endpoint the user configured for the same store); else the first untrusted
    origin (or the value's problem)."""
    user_origins: set[Origin] = set()
    for user_key, value in user.items():
        if store_of_endpoint_key(user_key) == store:
            user_origins.update(o for o in map(_origin_or_none, _endpoint_urls(user_key, value, user)) if o)
    urls = _endpoint_urls(key, merged[key], merged)
    if not urls:
        return None  # a scheme key: it names no host
    for url in urls:
        origin = _origin_or_none(url)
        if origin is None:
            return "an unparseable URL"
        if origin not in trust.origins and origin not in user_origins:
            return str(origin)
    return None


def _endpoint_urls(key: str, value: Any, properties: Mapping[str, Any]) -> list[str]:
    """The URLs an endpoint setting sends to: a URL as is, an ADLS authority with its scheme, each
    endpoint of an Azure connection string."""
    text = str(value or "").strip()
    if key.endswith("-scheme") or not text:
        return []
    if key.startswith("adls.connection-string") and _ABSOLUTE_URL.match(text):
        return [text]  # Iceberg's adls.connection-string.<account>: the account's endpoint URL
    if key.startswith("adls.connection-string"):
        parts = dict(p.split("=", 1) for p in text.split(";") if "=" in p)
        return [v for k, v in parts.items() if k.strip().lower().endswith("endpoint")] or ["unparseable:"]
    if key.endswith("-authority"):
        scheme_key = key.replace("-authority", "-scheme")
        return [f"{properties.get(scheme_key) or 'https'}://{text}"]
    return [text]


def _origin_or_none(url: str) -> Origin | None:
    try:
        return Origin.of(url)
    except ValueError:
        return None


def _report_dropped(catalog: str, source: str, keys: list[str]) -> None:
    if not keys:
        return
    log.debug("catalog-ext: catalog %s ignores %s from %s: a server answer may set only credentials, endpoints, "
              "region and path style", catalog, ", ".join(sorted(keys)), source)
    events.emit("answer.keys-dropped", catalog=catalog, answer=source, keys=sorted(keys))
