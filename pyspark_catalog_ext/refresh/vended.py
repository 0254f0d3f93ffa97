"""Which table-answer keys are vended credentials, and what they state, per store (the REST spec's storage-credential configs):

| store | credential | stated expiry |
|---|---|---|
| S3   | `s3.access-key-id`, `s3.secret-access-key`, `s3.session-token` | `s3.session-token-expires-at-ms` |
| GCS  | `gcs.oauth2.token` | `gcs.oauth2.token-expires-at` (epoch ms) |
| ADLS | `adls.sas-token.<host>` (one per storage account) | `adls.sas-token-expires-at-ms.<host>` |

Everything else in a table config (endpoints, regions, `adls.connection-string.<host>`) is the
FileIO's setting, not a credential, and is never renewed.
Why: docs/stores.md, section 'PyIceberg 0.12: PyArrow and fsspec'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_catalog_ext.catalog.storage_keys import (
    ADLS_SAS,
    ADLS_SAS_EXPIRY,
    GCS_TOKEN,
    GCS_TOKEN_EXPIRY,
    S3_ACCESS_KEY_ID,
    S3_EXPIRY,
    S3_SESSION_TOKEN,
)
from pyspark_catalog_ext.secret_keys import is_secret_key

__all__ = ["ADLS_SAS", "ADLS_SAS_EXPIRY", "GCS_TOKEN", "GCS_TOKEN_EXPIRY", "S3_EXPIRY", "StoreToken", "credential_identities",
           "expiry_ms", "has_credentials", "is_vended_key", "stated_expiry_s", "store_tokens"]


def is_vended_key(key: str) -> bool:
    """A key that comes with each renewal (never kept from the first answer): S3's secrets and expiry,
    the GCS token and its expiry, each ADLS SAS and its expiry."""
    if key.startswith("s3."):
        return is_secret_key(key) or key == S3_EXPIRY
    return key in (GCS_TOKEN, GCS_TOKEN_EXPIRY) or key.startswith((ADLS_SAS, ADLS_SAS_EXPIRY))


def has_credentials(config: Mapping[str, Any]) -> bool:
    """Does this config hand out a credential of any store?"""
    return bool(config.get(S3_ACCESS_KEY_ID) or config.get(GCS_TOKEN)
                or any(k.startswith(ADLS_SAS) and v for k, v in config.items()))


def expiry_ms(raw: Any) -> int | None:
    """A stated expiry (epoch ms) as its key gives it; None when absent, blank or not an integer."""
    try:
        return int(raw) if raw is not None and str(raw).strip() else None
    except (TypeError, ValueError):
        return None


def _s(raw: Any) -> float | None:
    ms = expiry_ms(raw)
    return ms / 1000.0 if ms is not None else None


def stated_expiry_s(config: Mapping[str, Any]) -> float:
    """The earliest expiry (epoch s) the config states for its credentials; inf when it states none."""
    stated = [_s(config.get(S3_EXPIRY)), _s(config.get(GCS_TOKEN_EXPIRY))]
    stated += [_s(v) for k, v in config.items() if k.startswith(ADLS_SAS_EXPIRY)]
    return min((s for s in stated if s is not None), default=float("inf"))


@dataclass(frozen=True)
class StoreToken:
    """One ADLS SAS (for one account host) or GCS token a config hands out, with its stated expiry."""

    store: str  # "adls" or "gcs"
    host: str | None  # ADLS: the account host the SAS is for
    token: str = field(repr=False)
    stated_expiry: str  # the expiry key's value as given ("" when none)

    @property
    def expires_at_ms(self) -> int | None:
        return expiry_ms(self.stated_expiry)


def store_tokens(config: Mapping[str, Any]) -> list[StoreToken]:
    """The ADLS SAS tokens of `config` (by key) then its GCS token."""
    out = []
    for key, value in sorted(config.items(), key=lambda item: str(item[0])):
        if str(key).startswith(ADLS_SAS) and value:
            host = str(key)[len(ADLS_SAS):]
            out.append(StoreToken("adls", host, str(value), str(config.get(ADLS_SAS_EXPIRY + host) or "")))
    if config.get(GCS_TOKEN):
        out.append(StoreToken("gcs", None, str(config[GCS_TOKEN]), str(config.get(GCS_TOKEN_EXPIRY) or "")))
    return out


def credential_identities(config: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """(what, the credential, its stated expiry) of each credential in `config`: two answers with the
    same identities hand out the same credentials with the same expiry."""
    out: set[tuple[str, str, str]] = set()
    if config.get(S3_ACCESS_KEY_ID):
        out.add((str(config[S3_ACCESS_KEY_ID]), str(config.get(S3_SESSION_TOKEN) or ""), str(config.get(S3_EXPIRY) or "")))
    out |= {("gcs" if t.store == "gcs" else f"adls:{t.host}", t.token, t.stated_expiry) for t in store_tokens(config)}
    return out
