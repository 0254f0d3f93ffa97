"""One exception hierarchy, each message a single line that says what is wrong and how to fix it.

Messages never contain secrets: callers pass only identifiers, URLs without userinfo, and
status codes. `redact()` is the last line of defence for text that came from outside.
"""

from __future__ import annotations

import re

from pyspark_catalog_ext.secret_keys import SECRET_IN_TEXT

__all__ = [
    "CatalogExtError",
    "ConfigError",
    "JavaError",
    "JarError",
    "CatalogError",
    "CatalogAuthError",
    "CatalogNotFoundError",
    "CatalogConflictError",
    "CatalogUnavailableError",
    "CatalogUnsupportedError",
    "CleanupRefused",
    "PolicyApiUnavailableError",
    "StaleTableError",
    "CommitStateUnknownError",
    "CredentialRefreshError",
    "CommitFailedError",
    "LakehouseError",
    "redact",
]


class CatalogExtError(Exception):
    """Base class. `str(err)` is always one line."""

    def __init__(self, message: str) -> None:
        super().__init__(redact(" ".join(str(message).split())))


class ConfigError(CatalogExtError):
    """Bad user input: unknown profile, bad URI, missing option."""


class JavaError(CatalogExtError):
    """Java is missing or too old."""


class JarError(CatalogExtError):
    """A JVM dependency can't be had (download failed, checksum mismatch, shim build failed)."""


class CatalogError(CatalogExtError):
    """The catalog answered with an error, or malformed data."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class CatalogAuthError(CatalogError):
    """401/403 from the catalog, or the token endpoint refused the credentials."""


class CatalogNotFoundError(CatalogError):
    """404: unknown warehouse, namespace, table or endpoint."""


class CatalogConflictError(CatalogError):
    """409 (or a failed requirement): the table changed under us, or already exists."""


class CatalogUnavailableError(CatalogError):
    """The catalog can't be reached, timed out, or kept answering 429/5xx."""


class CatalogUnsupportedError(CatalogError):
    """The catalog does not support the operation or endpoint (405/501, no rename, no views, ...).

    Deliberately not a CatalogNotFoundError: code that reads a 404 as "gone meanwhile" must not
    read "unsupported" that way (cleanup would skip a table it never saw, and delete its files)."""


class CleanupRefused(CatalogError):
    """`staged cleanup` (or orphan removal) could not be sure which files are unreferenced;
    nothing was deleted."""


class PolicyApiUnavailableError(ConfigError):
    """The catalog does not implement Polaris's policy API (maintain needs it or a policy file)."""


class StaleTableError(CatalogConflictError):
    """A replace was guarded by a table UUID that no longer matches (dropped and recreated)."""


class CommitStateUnknownError(CatalogUnavailableError):
    """The catalog's answer to a commit was lost and the table does not tell whether it landed.

    Nothing was deleted. Load the table and check before retrying."""


class CredentialRefreshError(CatalogExtError):
    """Storage credentials expired and no refresh strategy could renew them."""


class CommitFailedError(CatalogExtError):
    """A commit did not land (and we know it did not)."""


class LakehouseError(CatalogExtError):
    """The embedded SeaweedFS lakehouse could not start or stop."""


# Shapes of secrets we may meet in text from outside (server error bodies, JVM exceptions, URLs).
# The Authorization header comes first: its value is a scheme and a token, and the generic
# `word: value` rule would mask only the scheme and leave the token in clear.
_AUTH_SCHEMES = r"(?:bearer|basic|digest|negotiate|token|oauth|aws4-hmac-sha256)\s+"
_SECRET_PATTERNS = [
    re.compile(r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:" + _AUTH_SCHEMES + r")?)[^\s\"'&,;}]+"),
    re.compile(r"(?i)((?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)[^\r\n\"']+"),
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?i)([?&](?:sig|signature|access_token|id_token|refresh_token|client_secret|api_key|apikey|key|code)=)[^&\s#\"']+"),
    re.compile(r"(?i)(X-Amz-Security-Token=|X-Amz-Credential=|X-Amz-Signature=)[^&\s]+"),
    SECRET_IN_TEXT,
    re.compile(r"(?i)(://)[^/\s:@]+:[^/\s@]+@"),
]


def redact(text: str) -> str:
    """Mask anything that looks like a credential in free text."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return text
