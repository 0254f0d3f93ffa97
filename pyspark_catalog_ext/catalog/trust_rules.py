"""Who may decide what, read from the spec both runtimes share (`resources/trust-rules.json`; the
JVM shim carries the same file):

- the URL settings only the user gives, whose origins are trusted with the catalog's credentials;
- the allow-list of keys a server answer may set (`/v1/config`, a table's config, its
  storage-credentials): anything else it says is dropped, so no answer names code or a knob;
- which of those keys are a store's endpoints, which are credentials;
- the table metadata properties from which a client would load a class.

Java twin: `io.catalogext.shim.config.TrustRules`.
Why: docs/security.md, section 'What a server may set'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["SPEC_PATH", "USER_URL_KEYS", "is_metadata_code_key", "server_may_set", "spec", "store_of_endpoint_key"]

SPEC_PATH = Path(__file__).resolve().parent.parent / "resources" / "trust-rules.json"
STORES = ("s3", "gcs", "adls")


@lru_cache(maxsize=1)
def spec() -> dict[str, Any]:
    return json.loads(SPEC_PATH.read_text(encoding="utf-8"))


def _exact_and_prefixes(groups: Iterable[Mapping[str, Any]]) -> tuple[frozenset[str], tuple[str, ...]]:
    keys: set[str] = set()
    prefixes: list[str] = []
    for group in groups:
        keys.update(group.get("keys", ()))
        prefixes.extend(group.get("prefixes", ()))
    return frozenset(keys), tuple(prefixes)


_SETTABLE = spec()["server-settable"]
_STORAGE = _SETTABLE["storage"]
_ENDPOINTS = _STORAGE["endpoints"]
#: Settings whose URL the user gives (never read from a server's answer): their origins are trusted.
USER_URL_KEYS: tuple[str, ...] = tuple(spec()["user-url-keys"]["keys"])
_STORAGE_KEYS, _STORAGE_PREFIXES = _exact_and_prefixes(
    [_STORAGE["credentials"], _STORAGE["refresh-endpoints"], _STORAGE["placement"], _STORAGE["remote-signing"],
     {"keys": [k for store in STORES for k in _ENDPOINTS[store]], "prefixes": _ENDPOINTS["adls-prefixes"]}])
_CATALOG_KEYS, _CATALOG_PREFIXES = _exact_and_prefixes([_SETTABLE["catalog"]])
_TABLE_KEYS, _TABLE_PREFIXES = _exact_and_prefixes([_SETTABLE["table"]])
_CODE_SUFFIXES: tuple[str, ...] = tuple(spec()["metadata-code-keys"]["suffixes"])


def server_may_set(key: str, *, config: bool = False) -> bool:
    """Whether a server answer may set `key`: a table answer (config, storage-credentials, /credentials)
    the storage keys and the table's own auth token; `/v1/config` (`config=True`) the storage keys
    and the catalog's own protocol keys."""
    if key in _STORAGE_KEYS or key.startswith(_STORAGE_PREFIXES):
        return True
    if config:
        return key in _CATALOG_KEYS or key.startswith(_CATALOG_PREFIXES)
    return key in _TABLE_KEYS or key.startswith(_TABLE_PREFIXES)


def store_of_endpoint_key(key: str) -> str | None:
    """"s3", "gcs" or "adls" when `key` says where that store's requests go; None otherwise."""
    for store in STORES:
        if key in _ENDPOINTS[store]:
            return store
    return "adls" if key.startswith(tuple(_ENDPOINTS["adls-prefixes"])) else None


def is_metadata_code_key(key: str) -> bool:
    """Whether a table metadata property names code a client would load (`write.py-location-provider.impl`)."""
    return key.endswith(_CODE_SUFFIXES)
