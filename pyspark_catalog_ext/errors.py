"""One exception hierarchy, each message a single line that says what is wrong and how to fix it.

Messages never contain secrets: callers pass only identifiers, URLs without userinfo, and
status codes. `redact()` is the last line of defence for text that came from outside.
"""

from __future__ import annotations

import base64
import binascii
import re

from pyspark_catalog_ext.secret_keys import SECRET_IN_TEXT, SECRET_LIST_IN_TEXT, TEXT_WORDS, is_secret_param

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
    "CatalogRedirectError",
    "UntrustedOriginError",
    "SignerError",
    "SigningRefusedError",
    "CleanupRefused",
    "PolicyApiUnavailableError",
    "StaleTableError",
    "CommitStateUnknownError",
    "CredentialRefreshError",
    "GcsTokenRefused",
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


class CatalogRedirectError(CatalogError):
    """The catalog answered a redirect (301/302/303/307/308), which we never follow: a redirect would
    re-send a commit the guard does not count (307), turn it into a GET whose answer looks like
    success (303), or carry our headers to another host. `location` is the target without query."""

    def __init__(self, message: str, status: int | None = None, location: str = "") -> None:
        super().__init__(message, status)
        self.location = location


class UntrustedOriginError(CatalogError):
    """A request carrying the catalog's credentials was about to go to an origin outside the catalog's
    trust set (a server-given URL): nothing was sent. `origin` and `key` name what was refused."""

    def __init__(self, message: str, status: int | None = None, origin: str = "", key: str | None = None) -> None:
        super().__init__(message, status)
        self.origin = origin
        self.key = key


class SignerError(CatalogError):
    """The catalog's S3 signer could not sign a request (unreachable, a redirect, a malformed answer...)."""


class SigningRefusedError(SignerError, PermissionError):
    """The catalog's S3 signer refused to sign a request (403): outside the table, or not this
    principal's. A PermissionError too, as S3's own refusals are in both PyIceberg FileIOs."""


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


class CredentialsRejectedError(CredentialRefreshError):
    """S3 rejected a table's keys again right after they were refreshed: refreshing cannot help."""


class GcsTokenRefused(CatalogExtError, PermissionError):
    """GCS answered 401 to a vended token: raised by the PyIceberg FileIO's gcsfs credentials in place
    of gcsfs's own retries with the same token, so the table's token is renewed at once."""

    code = 401


class CommitFailedError(CatalogExtError):
    """A commit did not land (and we know it did not)."""


class LakehouseError(CatalogExtError):
    """The embedded SeaweedFS lakehouse could not start or stop."""


# Shapes of secrets we may meet in text from outside (server error bodies, JVM exceptions, URLs).
# The Authorization header comes first: its value is a scheme and a token, and the generic
# `word: value` rule would mask only the scheme and leave the token in clear.
_AUTH_SCHEMES = r"(?:bearer|basic|digest|negotiate|token|oauth|aws4-hmac-sha256)\s+"
_SECRET_PATTERNS = [
    re.compile(r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:" + _AUTH_SCHEMES + r")?)[^\s\"'&,;}\[]+"),
    re.compile(r"(?i)((?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)[^\r\n\"']+"),
    # A bare `bearer <token>`; prose that says "a bearer token" or "bearer auth" is no token.
    re.compile(r"(?i)(\bbearer\s+)(?!(?:tokens?|auth|authentication|header|scheme)(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/=-]+"),
    SECRET_IN_TEXT,
    # URL userinfo: `user:password@`, a token alone (`https://ghp_x@host`), a password holding `/`
    # (`user:pa/ss@`); a port followed by a path (`host:8181/x@y`) is not userinfo.
    # A password may hold `@` (`user:p@ss@host`): the userinfo ends at the last `@` before the host.
    re.compile(r"(?i)(://)(?:[^/\s@:]+|[^/\s@:]*:(?!\d*/)\S*?)(?=@[^\s@/]*(?:[/?#\s\"']|$))"),
    # XML elements of S3 and STS bodies: <SecretAccessKey>, <SessionToken>, <AccessKeyId>,
    # <AWSAccessKeyId> (S3's InvalidAccessKeyId), <SignatureProvided> (SignatureDoesNotMatch).
    re.compile(r"(?i)(<[\w:.-]*?(?:secret|token|password|signature|credential|accesskeyid|accesskey|apikey|privatekey"
               r"|sharedkey|authorization)[\w:.-]*\s*>)[^<]+"),
    # A Google OAuth2 access token alone (`ya29.` then base64url).
    re.compile(r"()\bya29\.[A-Za-z0-9._-]{8,}"),
    # A SAS (or other secret query string) without its `?`: `sig=...&se=...` at the start of a word.
    re.compile(r"(?i)((?:^|(?<=[\s,;(\"']))sig=)[^&\s\"']+"),
    # A bare JWT (`invalid token eyJ...`): header and payload are base64url JSON, so both start eyJ.
    re.compile(r"()\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
]
# A URL query parameter: masked when secret_keys.is_secret_param says its name is a secret's
# (`?sig=`, `X-Amz-Signature=`, `storageRefreshToken=`), the same rule as evidence and messages use;
# an OAuth2 `code` is one too.
_QUERY_PARAM = re.compile(r"([?&])([^=&\s#\"']+)=([^&\s#\"']+)")


def _query_param(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"{match.group(1)}{name}=***" if is_secret_param(name) or name.lower() == "code" else match.group(0)


# A bare `Basic <token>` outside an Authorization header: masked when the token decodes to `user:password`
# (prose such as "basic auth" or "Basic compaction" never does).
_BASIC = re.compile(r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")


def _basic_credentials(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + "***" if b":" in decoded else match.group(0)


# A quoted value under a secret's name may hold spaces (`password="a b c"`): everything to its closing quote.
_QUOTED_SECRET = re.compile(r"(?i)((?:" + TEXT_WORDS + r")(?:\\*[\"'])?\s*[:=]\s*\\*([\"']))[^\"'\n]*?(?=\\*\2)")
# A YAML list under a secret's name (`tokens:` then `- value` lines): every item is a secret.
_YAML_SECRET_LIST = re.compile(r"(?im)(^[ \t]*[\w.-]*(?:" + TEXT_WORDS + r")s?[\w.-]*[ \t]*:[ \t]*\r?\n)((?:[ \t]*-[ \t]*[^\n]*(?:\n|$))+)")
_YAML_ITEM = re.compile(r"(?m)(^[ \t]*-[ \t]*)[^\n]+")


# A PEM private key (a GCP service account's `private_key` among them), whole or cut short, with its
# line breaks as they are or escaped inside JSON (`\n`): the base64 body goes.
_PEM_KEY = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?:[A-Za-z0-9+/=\s]|\\[nr])*(-----END [A-Z0-9 ]*PRIVATE KEY-----)?")
_QUOTED = re.compile(r"(\\*[\"'])[^\"'\\]*(\\*[\"'])")


def redact(text: str) -> str:
    """Mask every secret this process holds (by value, in any encoding: `logsafety`), then anything
    that looks like a credential in free text."""
    from pyspark_catalog_ext import logsafety  # (logsafety needs nothing of this module)

    text = logsafety.MASK.mask(text)
    text = _YAML_SECRET_LIST.sub(lambda m: m.group(1) + _YAML_ITEM.sub(r"\1***", m.group(2)), text)
    text = _QUOTED_SECRET.sub(lambda m: m.group(1) + "***", text)
    text = _PEM_KEY.sub(lambda m: m.group(1) + "***" + (m.group(2) or ""), text)
    text = SECRET_LIST_IN_TEXT.sub(lambda m: m.group(1) + _QUOTED.sub(r"\1***\2", m.group(2)), text)
    text = _QUERY_PARAM.sub(_query_param, text)
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + "***", text)
    return _BASIC.sub(_basic_credentials, text)
