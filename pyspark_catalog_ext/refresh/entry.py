"""One table's current storage credentials, shared by every FileIO handed out for it: each
storage prefix's keys, their generation, and the record of renewals and refusals the refresher
(`refresh/refresher.py`) keeps on it.

Java twin: `io.catalogext.shim.refresh.TableEntry`.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.locations import longest_prefix
from pyspark_catalog_ext.catalog.storage_keys import STORAGE_REFRESH_TOKEN
from pyspark_catalog_ext.catalog.trust_rules import server_may_set
from pyspark_catalog_ext.errors import CredentialRefreshError
from pyspark_catalog_ext.refresh.rules import hard_margin_s
from pyspark_catalog_ext.refresh.scheduler import TableState
from pyspark_catalog_ext.refresh.vended import credential_identities, has_credentials, is_vended_key, stated_expiry_s

__all__ = ["RejectionWave", "TableEntry"]


def _key_set(config: Mapping[str, Any] | None, storage_credentials: Iterable[Mapping[str, Any]] | None) -> frozenset:
    """Which credentials an answer hands out (`vended.credential_identities`: S3 keys, GCS tokens, ADLS
    SAS tokens, each with its stated expiry), wherever it lists them (a load names Polaris's keys in
    the table config and in storage-credentials, its /credentials only in the latter). Two answers with
    the same set hand out the same keys with the same expiry (a catalog's cache); the same keys with a
    later expiry are a renewal of their lease."""
    configs = [config or {}] + [cred.get("config") or {} for cred in storage_credentials or []]
    return frozenset(identity for c in configs for identity in credential_identities(c))


def _expiry_s(config: Mapping[str, Any]) -> float:
    """The earliest expiry the credentials of `config` state, whatever their store (inf: none stated)."""
    return stated_expiry_s(config)


@dataclass(frozen=True)
class _Slot:
    """The keys for one storage prefix ("" = the table config's keys)."""

    prefix: str
    config: Mapping[str, str]
    refresh_token: str | None
    expires_at_s: float
    wait_at_s: float  # from then on a reader waits for new keys (expiry minus the hard margin)

    def __repr__(self) -> str:  # never the keys
        return f"_Slot(prefix={self.prefix!r}, expires_at_s={self.expires_at_s})"


@dataclass(frozen=True)
class RejectionWave:
    """A rejection that started a refresh: the generation of the rejected keys, and how long they had lived.

    Java twin: `io.catalogext.shim.refresh.RejectionWave`."""

    generation: int
    keys_lived_s: float


_handles = itertools.count(1)


class TableEntry:
    """The current storage credentials of one table, shared by every FileIO handed out for it.

    Thread-safe. `generation` grows on every renewal; `refresh()` is single-flight: a caller that
    saw generation g does nothing if another thread already replaced g.
    """

    def __init__(self, catalog: str, identifier: tuple[str, ...], *, location: str | None, staged: bool,
                 stage_create_request: dict | None = None, refresh_endpoint: str | None = None,
                 assumed_lifetime_s: float = 0.0, clock: Callable[[], float] = time.time,
                 learned_lifetime: Callable[[], float | None] = lambda: None) -> None:
        self.handle = f"t{next(_handles)}"
        self.catalog = catalog
        self.identifier = tuple(identifier)
        self.location = location
        self.staged = staged
        self.stage_create_request = stage_create_request
        self.refresh_endpoint = refresh_endpoint
        self.assumed_lifetime_s = assumed_lifetime_s  # for keys vended without an expiry; 0: trust them
        self._clock = clock
        self._learned_lifetime = learned_lifetime  # the catalog's keys died this early before: renew by it
        self._state_lock = threading.Lock()
        self.refresh_lock = threading.RLock()  # single flight (re-entered: a reactive refresh holds it across its checks)
        self.generation = 0
        self.fetched_at_s = 0.0
        self.last_used_s = 0.0
        self._slots: list[_Slot] = []
        self.refreshes_by_strategy: collections.Counter[str] = collections.Counter()
        self.last_strategy: str | None = None
        self.last_error: str | None = None
        self.failures = 0  # consecutive failed renewals
        self.retry_at_s = 0.0  # a reader waiting for keys does not ask again before this
        # The lifetime the catalog stated for the current keys (None: it stated none).
        self.stated_lifetime_s: float | None = None
        # generation -> (fetched at, stated lifetime) of the last few key sets: a stream still holding
        # keys of an older generation can tell how long they lived.
        self.history: collections.OrderedDict[int, tuple[float, float | None]] = collections.OrderedDict()
        self.reactive_at: collections.deque[float] = collections.deque()  # reactive refreshes in the last minute
        self.rejections = 0
        self.reactive_refreshes = 0
        # How long each operation S3 rejected waited before its retry with new keys succeeded (last 256).
        self.reactive_waits_s: collections.deque[float] = collections.deque(maxlen=256)
        self._keys: frozenset = frozenset()  # _key_set of the current keys
        # Refreshes the catalog answered with the current keys again (its credential cache), and until
        # when nobody asks again while the current keys hold (past the cache's window).
        self.cached_answers = 0
        self.not_before_s = 0.0
        # The last rejection that started a refresh, while no store has accepted newer keys (None: none
        # such): newer keys rejected no older than these had lived, or younger than a learnable lifetime,
        # mean refreshing cannot help
        # (credential-rules.json `refreshing-cannot-help`).
        self.unanswered_wave: RejectionWave | None = None

    def fetch_of(self, generation: int) -> tuple[float, float | None]:
        """When the keys of `generation` were fetched, and the lifetime stated for them (the current
        keys' for a generation no longer in the history)."""
        return self.history.get(generation, (self.fetched_at_s, self.stated_lifetime_s))

    def accepted(self, generation: int) -> None:
        """A store accepted a request signed with the keys of `generation` (the hot path: one compare)."""
        wave = self.unanswered_wave
        if wave is not None and generation > wave.generation:
            self.unanswered_wave = None

    @property
    def name(self) -> str:
        return ".".join([self.catalog, *self.identifier])

    # -- state ---------------------------------------------------------------------------------
    def update(self, config: Mapping[str, Any], storage_credentials: Iterable[Mapping[str, Any]]) -> None:
        """Install credentials from a LoadTable/LoadCredentials-shaped answer; bumps the generation."""
        now = self._clock()
        learned = self._learned_lifetime()
        stated: list[float] = []

        def slot(prefix: str, cfg: dict, token: str | None) -> _Slot:
            logsafety.register_secret_properties(cfg)
            if token:
                logsafety.register([token])
            expires = _expiry_s(cfg)
            if expires != float("inf"):
                stated.append(expires - now)
            elif self.assumed_lifetime_s > 0:
                # No expiry given (Unity 0.6, unitycatalog#1885, omits it for keys that do expire): assume one.
                expires = now + self.assumed_lifetime_s
            if learned is not None:
                expires = min(expires, now + learned)  # this catalog's keys died earlier than it said
            return _Slot(prefix, cfg, token, expires, expires - hard_margin_s(now, expires))

        slots = []
        # Only keys a catalog may vend (trust-rules.json): a renewal never installs a class name or a knob.
        base = {k: str(v) for k, v in (config or {}).items()
                if (k.startswith("s3.") or is_vended_key(k)) and server_may_set(k)}
        if has_credentials(base):
            slots.append(slot("", base, None))
        # A prefix's storage-refresh-token is kept until an answer rotates it: a /credentials answer
        # need not carry one (the JVM's CredentialSlots keeps them the same way).
        with self._state_lock:
            held_tokens = {s.prefix: s.refresh_token for s in self._slots if s.refresh_token}
        for cred in storage_credentials or []:
            cfg = {k: str(v) for k, v in (cred.get("config") or {}).items() if server_may_set(k)}
            if not cfg:
                continue  # lakekeeper#1923: an entry without credentials (the JVM drops it too: RefreshTokenCapture)
            prefix = str(cred.get("prefix") or "")
            slots.append(slot(prefix, cfg, cred.get(STORAGE_REFRESH_TOKEN) or held_tokens.get(prefix)))
        if not slots:
            raise CredentialRefreshError(f"the catalog returned no storage credentials for table {self.name}")
        with self._state_lock:
            self._slots = slots
            self._keys = _key_set(config, storage_credentials)
            self.not_before_s = 0.0
            self.fetched_at_s = now
            self.stated_lifetime_s = min(stated) if stated else None
            self.generation += 1
            self.history[self.generation] = (now, self.stated_lifetime_s)
            while len(self.history) > 8:
                self.history.popitem(last=False)

    def holds(self, config: Mapping[str, Any] | None, storage_credentials: Iterable[Mapping[str, Any]] | None) -> bool:
        """Does an answer hand out exactly the keys this entry already has? Then it is no renewal: a
        catalog's credential cache (Polaris keeps a table location's keys for the shorter of its cache
        setting and half their remaining lifetime) answers every load, re-stage or /credentials with them."""
        answered = _key_set(config, storage_credentials)
        with self._state_lock:
            return bool(answered) and answered == self._keys

    def slot_for(self, location: str) -> tuple[int, Mapping[str, str], float]:
        """(generation, keys, when to stop using them) for `location`: the longest matching prefix wins (spec);
        else the table config's keys."""
        with self._state_lock:
            self.last_used_s = self._clock()
            prefix = longest_prefix((s.prefix for s in self._slots if s.prefix), location)
            best = next((s for s in self._slots if prefix and s.prefix == prefix), None)
            if best is None:
                best = next((s for s in self._slots if not s.prefix), self._slots[0] if self._slots else None)
            if best is None:
                return self.generation, {}, float("inf")
            return self.generation, best.config, best.wait_at_s

    @property
    def wait_at_s(self) -> float:
        """When the first of the table's keys enters its hard margin."""
        with self._state_lock:
            return min((s.wait_at_s for s in self._slots), default=float("inf"))

    @property
    def expires_at_s(self) -> float:
        with self._state_lock:
            return min((s.expires_at_s for s in self._slots), default=float("inf"))

    def state(self) -> TableState:
        with self._state_lock:
            return TableState(
                handle=self.handle, name=self.name, generation=self.generation, fetched_at_s=self.fetched_at_s,
                expires_at_s=min((s.expires_at_s for s in self._slots), default=float("inf")),
                in_use=self.last_used_s >= self.fetched_at_s, not_before_s=self.not_before_s,
            )

    def request(self) -> dict:
        """The table request the strategies in `refresh.strategies` understand (holds refresh tokens: never log it)."""
        with self._state_lock:
            tokens = {s.prefix: s.refresh_token for s in self._slots if s.refresh_token}
        return {
            "catalog": self.catalog, "namespace": list(self.identifier[:-1]), "table": self.identifier[-1],
            "location": self.location, "staged": self.staged, "stage_create_request": self.stage_create_request,
            "refresh_endpoint": self.refresh_endpoint, "storage_refresh_tokens": tokens,
        }

    def __repr__(self) -> str:
        return f"TableEntry({self.name!r}, generation={self.generation}, staged={self.staged})"
