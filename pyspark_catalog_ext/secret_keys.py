"""What counts as a secret: the one definition the package uses to mask conf values, keep
settings off command lines, redact free text and tell Spark what to hide.

A property key names a secret when it ends in one of SECRET_WORDS after a `.`, `-` or `_`
(`spark.sql.catalog.lake.credential`, `s3.secret-access-key`, `access_token`, `header.Authorization`);
a word's parts may be joined by `-`, `_`, `.` or nothing, so Hadoop's `fs.s3a.secret.key`,
`fs.s3a.access.key`, `fs.gs.auth.service.account.private.key` and `fs.azure.account.key.<account>`
count too (Spark's default redaction hides some of them in its UI, but they would still reach
spark-submit's command line).
"""

from __future__ import annotations

import re

__all__ = ["SECRET_WORDS", "is_secret_key", "is_secret_param", "SECRET_IN_TEXT", "SECRET_LIST_IN_TEXT", "TEXT_WORDS", "SPARK_DEFAULT_REDACTION",
           "REDACTION_REGEX"]

SECRET_WORDS = ("credential", "token", "secret", "password", "passwd", "pwd", "secret-access-key", "access-key-id",
                "access-key", "session-token", "signature", "authorization", "api-key", "apikey", "private-key",
                "shared-key", "cookie", "sse.key", "secret-key", "account-key", "subscription-key")
# A word counts at the end of the key or of a dotted segment: `adls.sas-token.<account>` (Iceberg's
# per-account SAS tokens), `s3.sse.key`, but not `token-expires-in-ms` or `s3.sse.key-md5`.
_FLEXIBLE_WORDS = sorted((re.escape(w).replace(r"\-", "[-_.]?").replace(r"\.", "[-_.]?") for w in SECRET_WORDS),
                         key=len, reverse=True)
_SECRET_KEY = re.compile(r"(?i)(^|[._-])(" + "|".join(_FLEXIBLE_WORDS) + r")($|\.)")
# `header.<Name>` properties become HTTP headers on every catalog request: any header whose name
# speaks of auth, keys, tokens, cookies or sessions carries a secret (`header.X-Api-Key`), while
# `header.X-Iceberg-Access-Delegation` does not.
_HEADER_WORDS = "auth|key|token|secret|cookie|signature|password|credential|session"
_SECRET_HEADER = re.compile(r"(?i)(^|\.)header\.[^=]*(" + _HEADER_WORDS + ")")
# The same words in free text (server error bodies, JVM messages): `token=...`, `"secretAccessKey": "..."`;
# inside prose a word may be written with `-`, `_`, `.` or nothing between its parts.
# A quote may be escaped (`{\"token\": \"...\"}`: JSON inside a JSON string or a log line), and the
# value may be the first of a JSON list (`"X-Amz-Security-Token": ["..."]`, the S3 signer's headers).
TEXT_WORDS = _TEXT_WORDS = "|".join(_FLEXIBLE_WORDS)
SECRET_IN_TEXT = re.compile(r"(?i)((?:" + _TEXT_WORDS + r")(?:\\*[\"'])?\s*[:=]\s*(?:\[\s*)?(?:\\*[\"'])?)[^\s\"'&,;}\]\\]+")
#: A JSON list under a secret's name: every string in it is a secret (`"Authorization": ["AWS4...", ...]`).
SECRET_LIST_IN_TEXT = re.compile(r"(?i)((?:" + _TEXT_WORDS + r")\\*[\"']\s*:\s*\[)([^\]]*)")
# Spark's default only covers secret|password|token|access key: `...catalog.lake.credential`,
# `s3.access-key-id` and `header.X-Api-Key` would show in the Spark UI, the event log and
# spark-submit's echo without the additions, which are SECRET_WORDS and the header rule above.
SPARK_DEFAULT_REDACTION = "(?i)secret|password|token|access[.]?key"
REDACTION_REGEX = (SPARK_DEFAULT_REDACTION + "|signing|" + _TEXT_WORDS
                   + r"|(^|\.)header\.[^=]*(" + _HEADER_WORDS + ")")


def is_secret_key(key: str) -> bool:
    """True for conf keys whose values are secrets (credentials, tokens, S3/SSE/SAS keys, auth headers)."""
    return bool(_SECRET_KEY.search(key) or _SECRET_HEADER.search(key))


# URL query parameters are named in any case and style (`storageRefreshToken`, `X-Amz-Signature`,
# `api_key`, `sig`), so a name counts when it merely contains one of these.
_PARAM_WORDS = ("token", "secret", "credential", "signature", "password", "key", "sig", "cookie", "authorization")


def is_secret_param(name: str) -> bool:
    """True for URL query parameters whose values are secrets (masked in evidence and messages)."""
    lowered = name.lower()
    return any(word in lowered for word in _PARAM_WORDS) or is_secret_key(name)
