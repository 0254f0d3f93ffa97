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
from typing import Any

from pyspark_catalog_ext.secret_keys import is_secret_key

__all__ = ["ADLS_SAS", "ADLS_SAS_EXPIRY", "GCS_TOKEN", "GCS_TOKEN_EXPIRY", "S3_EXPIRY", "credential_identities",
           "has_credentials", "is_vended_key", "stated_expiry_s"]

S3_EXPIRY = "s3.session-token-expires-at-ms"
GCS_TOKEN = "gcs.oauth2.token"
GCS_TOKEN_EXPIRY = "gcs.oauth2.token-expires-at"
ADLS_SAS = "adls.sas-token."  # + <host>
ADLS_SAS_EXPIRY = "adls.sas-token-expires-at-ms."  # + <host>


def is_vended_key(key: str) -> bool:
    """A key that comes with each renewal (never kept from the first answer): S3's secrets and expiry,
    the GCS token and its expiry, each ADLS SAS and its expiry."""
    if key.startswith("s3."):
        return is_secret_key(key) or key == S3_EXPIRY
    return key in (GCS_TOKEN, GCS_TOKEN_EXPIRY) or key.startswith((ADLS_SAS, ADLS_SAS_EXPIRY))


def has_credentials(config: Mapping[str, Any]) -> bool:
    """Does this config hand out a credential of any store?"""
    return bool(config.get("s3.access-key-id") or config.get(GCS_TOKEN)
                or any(k.startswith(ADLS_SAS) and v for k, v in config.items()))


def _ms(raw: Any) -> float | None:
    try:
        return int(raw) / 1000.0 if raw is not None and str(raw).strip() else None
    except (TypeError, ValueError):
        return None


def stated_expiry_s(config: Mapping[str, Any]) -> float:
    """The earliest expiry (epoch s) the config states for its credentials; inf when it states none."""
    stated = [_ms(config.get(S3_EXPIRY)), _ms(config.get(GCS_TOKEN_EXPIRY))]
    stated += [_ms(v) for k, v in config.items() if k.startswith(ADLS_SAS_EXPIRY)]
    return min((s for s in stated if s is not None), default=float("inf"))


def credential_identities(config: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    """(what, the credential, its stated expiry) of each credential in `config`: two answers with the
    same identities hand out the same credentials with the same expiry."""
    out: set[tuple[str, str, str]] = set()
    if config.get("s3.access-key-id"):
        out.add((str(config["s3.access-key-id"]), str(config.get("s3.session-token") or ""), str(config.get(S3_EXPIRY) or "")))
    if config.get(GCS_TOKEN):
        out.add(("gcs", str(config[GCS_TOKEN]), str(config.get(GCS_TOKEN_EXPIRY) or "")))
    for key, value in config.items():
        if key.startswith(ADLS_SAS) and value:
            host = key[len(ADLS_SAS):]
            out.add(("adls:" + host, str(value), str(config.get(ADLS_SAS_EXPIRY + host) or "")))
    return out
