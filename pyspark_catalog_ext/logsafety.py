"""Keeps secrets out of py4j's DEBUG logs.

py4j logs every protocol message at DEBUG ("Answer received: !ys<value>"). Reading a catalog's
conf or answering a credential callback moves secrets through py4j, so a user who turns on DEBUG
logging would see them. We mute py4j while reading secrets and mask every secret we know of in
whatever py4j logs afterwards.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping

from cachetools import LRUCache

from pyspark_catalog_ext.secret_keys import is_secret_key

PY4J_LOGGERS = ("py4j", "py4j.java_gateway", "py4j.clientserver", "py4j.protocol")
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
                if value and len(value) >= 6:
                    self._secrets[value] = None

    def pin(self, values: Iterable[str]) -> None:
        """Configured secrets (`secret_conf_values`): kept for the life of the process."""
        with self._lock:
            for value in values:
                if value and len(value) >= 6 and value not in self._pinned:
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
        masked = message
        for secret in secrets:
            if secret in masked:
                masked = masked.replace(secret, "***")
        if masked is not message and masked != message:
            record.msg, record.args = masked, ()
        return True


MASK = SecretMaskingFilter()


def install() -> None:
    """Attach the masking filter to py4j's loggers (idempotent)."""
    for name in PY4J_LOGGERS:
        logger = logging.getLogger(name)
        if MASK not in logger.filters:
            logger.addFilter(MASK)


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
