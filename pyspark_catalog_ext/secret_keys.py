"""What counts as a secret: the one definition the package uses to mask conf values, keep
settings off command lines, redact free text and tell Spark what to hide.

A property key names a secret when it ends in one of SECRET_WORDS after a `.`, `-` or `_`
(`spark.sql.catalog.lake.credential`, `s3.secret-access-key`, `access_token`, `header.Authorization`).
"""

from __future__ import annotations

import re

__all__ = ["SECRET_WORDS", "is_secret_key", "SECRET_IN_TEXT", "SPARK_DEFAULT_REDACTION", "REDACTION_REGEX"]

SECRET_WORDS = ("credential", "token", "secret", "password", "secret-access-key", "access-key-id", "access-key",
                "session-token", "signature", "authorization")
_SECRET_KEY = re.compile(r"(?i)(^|[._-])(" + "|".join(re.escape(w) for w in SECRET_WORDS) + r")$")
# The same words in free text (server error bodies, JVM messages): `token=...`, `"secretAccessKey": "..."`;
# inside prose a word may be written with `-`, `_`, `.` or nothing between its parts.
_TEXT_WORDS = "|".join(sorted((re.escape(w).replace(r"\-", "[-_.]?") for w in SECRET_WORDS), key=len, reverse=True))
SECRET_IN_TEXT = re.compile(r"(?i)((?:" + _TEXT_WORDS + r")[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;}]+")
# Spark's default only covers secret|password|token|access key: `...catalog.lake.credential` would
# show in the Spark UI and event logs without the additions.
SPARK_DEFAULT_REDACTION = "(?i)secret|password|token|access[.]?key"
REDACTION_REGEX = SPARK_DEFAULT_REDACTION + "|credential|signing|session[.-]?token|authorization"


def is_secret_key(key: str) -> bool:
    """True for conf keys whose values are secrets (credential, token, S3 keys)."""
    return bool(_SECRET_KEY.search(key))
