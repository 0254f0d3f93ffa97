"""Keeps every secret the process holds out of logs and messages, by value.

Each secret the process is given or vended (conf secrets, catalog and OAuth tokens, vended keys,
SAS, GCS tokens) is registered here, and masked wherever it appears in any encoding a log line or
an error body can carry it: raw, percent-encoded, JSON-escaped. `errors.redact` applies it before
its shapes (which remain the fallback for secrets the process never held), and the filter sits on
the loggers that see requests and answers (py4j, which logs every protocol message at DEBUG;
urllib3, botocore, PyIceberg, this package). We also mute py4j while reading secrets we do not
know yet.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from cachetools import LRUCache

from pyspark_catalog_ext.secret_keys import is_secret_key

PY4J_LOGGERS = ("py4j", "py4j.java_gateway", "py4j.clientserver", "py4j.protocol")
#: Loggers (and their children) that may print a request or an answer: filtered by value.
MASKED_LOGGERS = ("py4j", "pyspark_catalog_ext", "pyiceberg", "urllib3", "requests", "botocore", "boto3", "s3fs",
                  "gcsfs", "adlfs", "azure", "google.auth")
_MAX_SECRETS = 4096
_MAX_PINNED = 1024


class SecretMaskingFilter(logging.Filter):
    """Replaces every registered secret in a record's message with ***.

    Two kinds, each bounded: refreshed credentials (`add`), of which the least recently added go
    first once there are `_MAX_SECRETS` (a long job sees a new session token every refresh, and the
    old ones have expired); and the catalogs' configured secrets (`pin`: a client secret, a token),
    live as long as the process, never forgotten for newer ones. Past `_MAX_PINNED` of those the
    filter drops every record instead: it fails closed rather than forget a live secret."""

    def __init__(self) -> None:
        super().__init__("pyspark-catalog-ext-secrets")
        self._secrets: LRUCache[str, None] = LRUCache(maxsize=_MAX_SECRETS)
        self._pinned: dict[str, None] = {}
        self._overflow = False
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        """Refreshed credentials (vended keys, refresh tokens): the oldest are forgotten first."""
        with self._lock:
            for value in values:
                if _maskable(value):
                    self._secrets[value] = None

    def pin(self, values: Iterable[str]) -> None:
        """Configured secrets (`secret_conf_values`): kept for the life of the process."""
        with self._lock:
            for value in values:
                if _maskable(value) and value not in self._pinned:
                    if len(self._pinned) >= _MAX_PINNED:
                        self._overflow = True
                        continue
                    self._pinned[value] = None

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            if self._overflow:
                return False
            secrets = [*self._pinned, *self._secrets]
        if not secrets:
            return True
        message = record.getMessage()
        masked = _mask(message, secrets)
        if masked != message:
            record.msg, record.args = masked, ()
        return True

    def mask(self, text: str) -> str:
        """`text` with every registered secret, in each of its encodings, replaced by ***."""
        with self._lock:
            secrets = [*self._pinned, *self._secrets]
        return _mask(text, secrets) if secrets else text


def _maskable(value: str) -> bool:
    """Long enough, and not a plain word, to be masked wherever it appears: a short or alphabetic
    value ("secret", "password") would mask ordinary text (by-value masking covers every log line)."""
    return bool(value) and len(value) >= 8 and not value.isalpha()


def _encodings(secret: str) -> set[str]:
    """How a secret appears in text: as is, percent-encoded (URLs, form bodies), JSON-escaped."""
    return {secret, quote(secret, safe=""), quote_plus(secret, safe=""), json.dumps(secret)[1:-1]}


def _mask(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        for form in _encodings(secret):
            if form in text:
                text = text.replace(form, "***")
    return text


MASK = SecretMaskingFilter()


def install() -> None:
    """Mask secrets in every record of the loggers that may print a request or an answer
    (`MASKED_LOGGERS` and their children, whenever they are created), and keep the filter on py4j's
    (idempotent). A logger's filter would see only its own records, not its children's: the record
    factory sees them all."""
    for name in PY4J_LOGGERS:
        logger = logging.getLogger(name)
        if MASK not in logger.filters:
            logger.addFilter(MASK)
    with _FACTORY_LOCK:
        current = logging.getLogRecordFactory()
        if not getattr(current, "_pce_masking", False):
            logging.setLogRecordFactory(_masking_factory(current))


_FACTORY_LOCK = threading.Lock()
_MASKED_PREFIXES = tuple(f"{m}." for m in MASKED_LOGGERS)


def _masking_factory(inner: Callable[..., logging.LogRecord]) -> Callable[..., logging.LogRecord]:
    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = inner(*args, **kwargs)
        if record.name in MASKED_LOGGERS or record.name.startswith(_MASKED_PREFIXES):
            MASK.filter(record)
        return record

    factory._pce_masking = True  # type: ignore[attr-defined]
    return factory


def register(values: Iterable[str]) -> None:
    """Secrets handed to this process (vended keys, tokens, SAS): masked by value from now on."""
    MASK.add(v for v in values if isinstance(v, str))


def register_secret_properties(props: Mapping[str, object]) -> None:
    """The values of `props` whose keys name secrets (a vended config, a table answer's config)."""
    register(str(v) for k, v in props.items() if v and is_secret_key(str(k)))


def mask_conf_secrets(props: Mapping[str, str]) -> None:
    """Mask the secrets among a catalog's (or a SparkSession's) settings in py4j's logs, for as
    long as the process lives."""
    MASK.pin(secret_conf_values(props))


def secret_conf_values(props: Mapping[str, str]) -> list[str]:
    """Values of catalog properties that hold secrets (credential, token, keys...)."""
    values = []
    for key, value in props.items():
        if is_secret_key(key):
            values.append(value)
            if key.endswith("credential") and ":" in value:
                values.append(value.split(":", 1)[1])  # the client secret alone
    return values


@contextlib.contextmanager
def py4j_muted() -> Iterator[None]:
    """Silence py4j's loggers while secrets we don't know yet cross the gateway."""
    loggers = [logging.getLogger(name) for name in PY4J_LOGGERS]
    saved = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, was in zip(loggers, saved, strict=True):
            logger.disabled = was
