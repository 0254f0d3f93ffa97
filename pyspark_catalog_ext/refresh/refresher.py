"""Fresh vended credentials for PyIceberg tables: one entry per table, renewed in the background.

The same rule as Spark's (`refresh.policy.RefreshPolicy`: renew when less than
max(min_ahead, fraction x lifetime) remains, back off while the keys are still valid) and the same
strategies (`refresh.strategies`: storage-refresh-token, refresh endpoint, re-stage,
`GET .../credentials`, reload, or the user's own source). Here the credentials live in Python:
`TableEntry` (entry.py) holds each storage prefix's current keys and a generation number, and
`fileio.RefreshingFileIO` asks it for the keys of every file it opens.

Java twin: `io.catalogext.shim.refresh.CredentialRegistry` (each table's entry: `refresh/entry.py`).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyspark_catalog_ext import events
from pyspark_catalog_ext.catalog.storage_keys import REFRESH_ENDPOINT
from pyspark_catalog_ext.errors import CatalogExtError, ConfigError, CredentialRefreshError, CredentialsRejectedError, redact
from pyspark_catalog_ext.refresh import policy as policy_knobs
from pyspark_catalog_ext.refresh.entry import RejectionWave, TableEntry
from pyspark_catalog_ext.refresh.policy import RefreshPolicy, refresh_policy
from pyspark_catalog_ext.refresh.rejection import Rejection, S3Prober
from pyspark_catalog_ext.refresh.rules import cache_window_end_s, spec
from pyspark_catalog_ext.refresh.scheduler import RefreshScheduler, TableState
from pyspark_catalog_ext.refresh.sources import CredentialSource, user_answer
from pyspark_catalog_ext.refresh.strategies import StrategyChain

if TYPE_CHECKING:  # its type only: the refresher is handed a live client
    from pyspark_catalog_ext.catalog.rest import CatalogClient

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")

__all__ = ["CredentialRefresher"]

#: Keys rejected younger than this were revoked, not short-lived: no lifetime is learned from them.
LEARN_MIN_AGE_S = spec()["learn-lifetime"]["min-age-ms"] / 1000.0


def _ms(seconds: float | None) -> Any:
    """A lifetime as an event field: whole milliseconds, or null when unknown (present either way)."""
    return events.NULL if seconds is None else int(seconds * 1000)


def _who(rejection: Rejection) -> str:
    return "S3" if rejection.store_expired is None else "the store"


class _InBackoff(CredentialRefreshError):
    """A reader asked during a failure backoff: the last error, and when the next attempt may go."""

    def __init__(self, retry_at_s: float, message: str) -> None:
        super().__init__(message)
        self.retry_at_s = retry_at_s


class CredentialRefresher:
    """Keeps the tables of one PyIceberg catalog supplied with fresh credentials.

    `client` is the catalog itself (a `CatalogClient`: it speaks the strategies' requests). A daemon
    thread runs a `RefreshScheduler` every `policy.check_interval_s` while any table is tracked; a
    FileIO that finds its keys expired (an idle table, say) renews them itself before reading.
    Entries are held weakly: a table nobody references any more is forgotten (the map stays
    bounded), and once none is left the thread ends, so a dropped catalog can be collected.
    """

    def __init__(self, catalog: str, client: CatalogClient, policy: RefreshPolicy | None = None, *,
                 source: CredentialSource | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep, background: bool = True,
                 skews: Callable[[], Mapping[str, float | None]] | None = None) -> None:
        if source is not None and not hasattr(source, "fetch"):
            raise ConfigError(f"{type(source).__name__} is not a credential source: it needs a fetch(table) method")
        self.catalog = catalog
        self.client = client
        self.policy = policy or refresh_policy()
        self.source = source
        self._local_clock = clock
        self._sleep = sleep
        # {"catalog": s, "s3": s}: each server's clock minus ours, as its Date headers said (None: unknown).
        self._skews = skews or (lambda: {})
        self._skew_reported: dict[str, bool] = {}
        self.skew_applied_s = 0.0
        #: The shortest lifetime this catalog's keys were seen to live (S3 rejected them), None if never.
        self.learned_lifetime_s: float | None = None
        self.prober = S3Prober()  # asks S3 for the code of a refusal that came without one
        self._chain = StrategyChain()
        self._lock = threading.Lock()
        self._by_handle: weakref.WeakValueDictionary[str, TableEntry] = weakref.WeakValueDictionary()
        self._by_identifier: weakref.WeakValueDictionary[tuple, TableEntry] = weakref.WeakValueDictionary()
        self.scheduler = RefreshScheduler(self.policy, self._states, self._refresh_handle, clock=self.clock)
        self._background = background
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._wake = threading.Event()  # a reader found due keys: run the schedule's pass now

    # -- registry --------------------------------------------------------------------------------
    def track(self, identifier: tuple[str, ...], config: Mapping[str, Any], storage_credentials: list, *,
              location: str | None, staged: bool, stage_create_request: dict | None = None) -> TableEntry:
        """The entry for a table the catalog just handed out, with the credentials of that answer.

        A second hand-out of the same table (same staged-ness) shares the existing entry, so the
        catalog sees one refresh request per table per renewal, however many Table objects exist.
        """
        key = (tuple(identifier), staged)
        refresh_endpoint = (config or {}).get(REFRESH_ENDPOINT)
        with self._lock:
            entry = self._by_identifier.get(key)
            if entry is None or (location and entry.location and entry.location != location):
                entry = TableEntry(self.catalog, identifier, location=location, staged=staged,
                                         stage_create_request=stage_create_request,
                                         refresh_endpoint=refresh_endpoint,
                                         assumed_lifetime_s=self.policy.assumed_lifetime_s, clock=self.clock,
                                         learned_lifetime=lambda: self.learned_lifetime_s)
                self._by_identifier[key] = entry
                self._by_handle[entry.handle] = entry
            self._ensure_thread()
        with entry.refresh_lock:
            entry.refresh_endpoint = refresh_endpoint or entry.refresh_endpoint
            if not entry.holds(config, storage_credentials):  # the same keys again: nothing new to install
                entry.update(config, storage_credentials)
        return entry

    def committed(self, entry: TableEntry) -> None:
        """A staged table's create commit landed: from now on it is refreshed as a committed table."""
        with self._lock:
            entry.staged = False
            entry.stage_create_request = None
            self._by_identifier.pop((entry.identifier, True), None)
            self._by_identifier[(entry.identifier, False)] = entry

    def tables(self) -> list[TableEntry]:
        with self._lock:
            return list(self._by_handle.values())

    def _states(self) -> list[TableState]:
        return [entry.state() for entry in self.tables()]

    # -- refreshing ------------------------------------------------------------------------------
    def _refresh_handle(self, handle: str, seen_generation: int) -> bool:
        """The schedule's renewal of one table. It never waits for the table's lock: a holder is
        renewing it already (a reader perhaps waiting out a backoff), and the pass goes on to the
        other tables instead of stalling behind that wait."""
        entry = self._by_handle.get(handle)
        if entry is None or not entry.refresh_lock.acquire(blocking=False):
            return False
        try:
            return self.refresh(entry, seen_generation)
        finally:
            entry.refresh_lock.release()

    def refresh(self, entry: TableEntry, seen_generation: int | None = None, *, reader: bool = False) -> bool:
        """Renew `entry` unless someone did since `seen_generation`; True if this call renewed its keys.

        `reader`: a FileIO that cannot go on without keys. After a failure it gets the last error
        again until the backoff (the policy's) has passed, instead of one catalog request per file.
        An answer with the keys the entry already has, whose expiry the catalog stated, is no renewal
        (False): the catalog's credential cache still holds them, and they are asked for again once its
        window has passed (`after_cache_window`); keys that expired meanwhile are an error.
        """
        seen = entry.generation if seen_generation is None else seen_generation
        with entry.refresh_lock:
            if entry.generation != seen:
                return False
            if reader and self.clock() < entry.retry_at_s:
                raise _InBackoff(entry.retry_at_s,
                    f"credentials of {entry.name} are expiring and refresh failed {entry.failures} time(s) in a row, "
                    f"next try in {entry.retry_at_s - self.clock():.1f} s: {entry.last_error}")
            req = entry.request()
            try:
                if self.source is not None:
                    answer = user_answer(self.source, req)
                else:
                    answer = self._chain.fetch(self.client, req)
                # The same keys again are a catalog's cache only where it stated their expiry: keys without
                # one (scheduled by the assumed lifetime) handed out again are static keys, taken again.
                if entry.stated_lifetime_s is not None and entry.holds(answer.get("config"), answer.get("storage-credentials")):
                    return self._same_keys(entry, answer["strategy"])
                entry.update(answer.get("config") or {}, answer.get("storage-credentials") or [])
            except Exception as exc:
                # Our errors are one redacted line already; anything else (a user source, botocore)
                # is redacted the same way before it reaches the scheduler's log or the status.
                error = exc if isinstance(exc, CatalogExtError) else CredentialRefreshError(
                    f"refresh of {entry.name} failed: {type(exc).__name__}: {exc}")
                entry.last_error = str(error)
                entry.failures += 1
                entry.retry_at_s = self.clock() + self.policy.backoff(entry.failures)
                raise error from None
            entry.last_error, entry.failures, entry.retry_at_s = None, 0, 0.0
            entry.last_strategy = answer["strategy"]
            entry.refreshes_by_strategy[answer["strategy"].split(" (")[0]] += 1
            log.info("catalog-ext: refreshed credentials of %s via %s (generation %d, expire in %.0f s)",
                     entry.name, answer["strategy"], entry.generation, entry.expires_at_s - self.clock())
            return True

    def _same_keys(self, entry: TableEntry, strategy: str) -> bool:
        """The catalog answered with the keys `entry` has (under its refresh lock): not a renewal."""
        now = self.clock()
        entry.cached_answers += 1
        entry.last_error, entry.failures, entry.retry_at_s = None, 0, 0.0  # the catalog answered
        if now >= entry.expires_at_s:
            entry.not_before_s = 0.0
            error = CredentialRefreshError(
                f"the catalog answered the refresh of {entry.name} ({strategy.split(' (')[0]}) with the same keys, which "
                f"expired {now - entry.expires_at_s:.1f} s ago: its credential cache outlives the keys it vends; "
                "check the catalog's credential cache setting against its credential lifetime")
            entry.last_error = str(error)
            raise error
        entry.not_before_s = self.after_cache_window(entry, now)
        log.info("catalog-ext: the catalog answered the refresh of %s (%s) with the keys it vended before (its "
                 "credential cache): not renewed; asking again in %.1f s", entry.name, strategy,
                 entry.not_before_s - now)
        return False

    def after_cache_window(self, entry: TableEntry, now: float) -> float:
        """When to ask again after a catalog handed back the current keys.

        Polaris keeps a table location's keys for the shorter of its cache setting and half their
        remaining lifetime when it minted them; we got them no earlier, so the window ends by half-way
        between our fetch and their expiry. A cache that keeps keys longer (say, until a buffer before
        expiry) is met by halving what is left each time. Never sooner than the policy's first
        backoff (or half the keys' remaining life, if shorter), and not past the moment readers must
        stop using the keys."""
        return cache_window_end_s(entry.fetched_at_s, entry.expires_at_s, entry.wait_at_s, now,
                                  self.policy.initial_backoff_s, self.policy.max_backoff_s)

    def ensure_fresh(self, entry: TableEntry, generation: int, wait_at_s: float | None = None) -> bool:
        """Called before a file is opened with keys of `generation`: renew now if they are (almost) expired.

        The background thread normally renews well ahead; this covers idle tables (the scheduler
        skips them) and a scheduler that could not keep up: a reader that finds its keys due starts
        the schedule's pass itself and goes on with them (`reader-of-due-keys-starts-their-renewal`).
        "Almost" is Spark's rule for a reader that must wait (`hard_margin_s`); it waits for the
        renewal as the shim's readers do (`_await_renewal`). True when the caller must look the keys up again.
        """
        now = self.clock()
        if now < (entry.wait_at_s if wait_at_s is None else wait_at_s):
            if self.scheduler.due(entry.state(), now):
                self._start_pass()
            return False
        if now < entry.not_before_s and now < entry.expires_at_s:
            return False  # the catalog's cache has nothing newer yet, and these keys still hold
        try:
            self._await_renewal(entry, generation)
        except CredentialRefreshError:
            if self.clock() < entry.expires_at_s:
                return False  # no renewal in time, but the held keys are still valid: go on with them
            raise
        return True

    def _await_renewal(self, entry: TableEntry, generation: int) -> bool:
        """Renew `entry` for a reader that cannot go on without keys, as the shim's `RefreshFlight.await`:
        during a failure backoff it waits for the next attempt, and after its own failed attempt it tries
        again after the backoff, both until `policy.timeout_s` has passed; then it raises the last error.
        Waiting, not asking: the catalog still sees one attempt per backoff step. True if this call
        renewed the keys (`refresh`)."""
        deadline = self.clock() + self.policy.timeout_s
        # Also bounded on this process's own clock: the servers' clock (skew applied) may step back.
        bound = time.monotonic() + self.policy.timeout_s
        while True:
            failures = entry.failures
            try:
                return self.refresh(entry, generation, reader=True)
            except _InBackoff as busy:
                if busy.retry_at_s > deadline or time.monotonic() >= bound:
                    raise
                self._sleep(busy.retry_at_s - self.clock())
            except CredentialRefreshError:
                if entry.failures == failures or self.clock() >= deadline:
                    raise  # not a failed attempt (a user source's own error type, say), or out of time
            # `generation` stays the one the caller saw: keys renewed by another thread meanwhile end
            # the wait (refresh answers False) instead of being renewed once more.

    # -- the servers' clock --------------------------------------------------------------------------
    def clock(self) -> float:
        """Now, on the server's clock once its Date headers differ from ours by more than
        `policy.max_clock_skew_s` (the catalog's first: its clock states the expiries; else S3's)."""
        skews = {**self._skews(), "s3": self.prober.last_skew_s}
        applied = 0.0
        for source in ("catalog", "s3"):
            skew = skews.get(source)
            beyond = skew is not None and abs(skew) > self.policy.max_clock_skew_s
            if beyond != self._skew_reported.get(source, False):
                self._skew_reported[source] = beyond
                if beyond:
                    assert skew is not None
                    log.warning("catalog-ext: the %s of %s is %+.1f s off this machine's clock; expiries follow its clock",
                                source, self.catalog, skew)
                    events.emit("clock.skew", catalog=self.catalog, server=source, skew_ms=int(round(skew * 1000)))
            if beyond and applied == 0.0:
                assert skew is not None
                applied = skew
        self.skew_applied_s = applied
        return self._local_clock() + applied

    # -- S3 said the keys are dead ---------------------------------------------------------------
    def rejected(self, entry: TableEntry, generation: int, rejection: Rejection) -> None:
        """S3 refused the keys of `generation` as no longer valid: renew them now, once per wave.

        Single-flight like every renewal: the first thread of a wave refreshes, the others find a newer
        generation and retry with it. Rate-limited per table (`policy.reactive_max_per_minute`): past it,
        the rejection is the caller's error. Keys that died before their stated (or assumed) lifetime
        teach the refresher this catalog's real lifetime, so later renewals come before the rejection.
        """
        with entry.refresh_lock:
            entry.rejections += 1
            now = self.clock()
            fetched_at, stated = entry.fetch_of(generation)
            age = max(0.0, now - fetched_at)
            if entry.generation != generation:
                return  # this wave was already answered with new keys: it teaches nothing more (learn-lifetime)
            limit = int(self.policy.reactive_max_per_minute)
            while entry.reactive_at and entry.reactive_at[0] <= now - 60.0:
                entry.reactive_at.popleft()
            allowed = len(entry.reactive_at) < limit
            events.emit("credentials.rejected", table=entry.name, catalog=self.catalog, error_code=rejection.code,
                        key_age_ms=int(age * 1000), stated_lifetime_ms=_ms(stated), reactive_refresh=allowed)
            if not allowed:
                knob = policy_knobs.KNOBS["reactive_max_per_minute"]
                raise CredentialRefreshError(
                    f"{_who(rejection)} rejected the keys of {entry.name} ({rejection.code}) after {age:.1f} s and "
                    + (f"{knob} is 0" if limit == 0 else f"{len(entry.reactive_at)} reactive refreshes in the last minute reached {knob}={limit}")
                    + "; raise it, or shorten catalog-ext refresh timing (min-ahead, lifetime-fraction)")
            entry.reactive_at.append(now)
            self._learn(age, stated, stated if stated is not None else (self.policy.assumed_lifetime_s or None))
            log.info("catalog-ext: %s rejected the keys of %s (%s) %.1f s after their fetch; refreshing now",
                     _who(rejection), entry.name, rejection.code, age)
            # Still under the lock: no other renewal can slip in between, so this is the wave's one request.
            if self._await_renewal(entry, generation):  # through a failure backoff too, as the shim's onRejected
                entry.reactive_refreshes += 1
                entry.unanswered_wave = RejectionWave(generation, age)
            else:  # credential-rules.json `same-keys-after-rejection`
                raise CredentialRefreshError(
                    f"{_who(rejection)} rejected the keys of {entry.name} ({rejection.code}) {age:.1f} s after their fetch, and the "
                    "catalog answered the refresh with the same keys (its credential cache keeps them until about "
                    f"{max(0.0, entry.not_before_s - now):.0f} s from now); the keys die sooner than the catalog says: "
                    "check its credential lifetime and cache setting")

    def _learn(self, age_s: float, stated_s: float | None, scheduled_s: float | None) -> None:
        # The keys lived `age_s` at most; learn it when shorter than promised. Keys rejected younger
        # than a second were revoked, not short-lived: they teach nothing (credential-rules.json
        # `learn-lifetime`, the shim's `RejectionLedger.MIN_LEARNED_LIFETIME_MS`).
        # `scheduled_s`: the lifetime the keys were scheduled by (stated, else assumed; None: endless).
        if age_s < LEARN_MIN_AGE_S or (scheduled_s is not None and age_s >= scheduled_s):
            return
        observed = age_s
        if self.learned_lifetime_s is not None and observed >= self.learned_lifetime_s:
            return
        self.learned_lifetime_s = observed
        log.warning("catalog-ext: keys of catalog %s live about %.1f s (stated: %s); renewing by that from now on",
                    self.catalog, observed, "none" if stated_s is None else f"{stated_s:.1f} s")
        events.emit("credentials.lifetime-learned", catalog=self.catalog, stated_lifetime_ms=_ms(stated_s),
                    observed_lifetime_ms=int(observed * 1000))

    def dead_on_arrival(self, entry: TableEntry, generation: int) -> bool:
        """Are the rejected keys of `generation` the newest, newer than the keys whose rejection last
        started a refresh, with no newer keys accepted by a store since, and living no longer than those had?
        Then refreshing cannot help (credential-rules.json `refreshing-cannot-help`, the shim's
        `TableEntry.cannotHelp`). Keys that follow accepted ones, or outlived the rejected ones, are renewed again;
        keys rejected younger than a learnable lifetime (`learn-lifetime`) were revoked, and outlive none."""
        wave = entry.unanswered_wave
        if wave is None or entry.generation != generation or generation <= wave.generation:
            return False
        fetched_at, _ = entry.fetch_of(generation)
        age = self.clock() - fetched_at
        return age <= wave.keys_lived_s or age < LEARN_MIN_AGE_S

    def rejected_again(self, entry: TableEntry, rejection: Rejection) -> CredentialsRejectedError:
        """The one-line error for keys rejected again right after a refresh: refreshing cannot help."""
        stated = entry.stated_lifetime_s
        age = max(0.0, self.clock() - entry.fetched_at_s)
        knob = policy_knobs.KNOBS["max_clock_skew_s"]
        entry.rejections += 1  # no event: it is the caller's error, as the shim's (credential-rules.json `rejected-event`)
        return CredentialsRejectedError(
            f"{_who(rejection)} rejected the keys of {entry.name} again ({rejection.code}) right after a refresh: "
            f"stated lifetime {'none' if stated is None else f'{stated:.1f} s'}, observed {age:.1f} s; "
            f"if this machine's clock is off, lower {knob} (now {int(self.policy.max_clock_skew_s * 1000)}), else the catalog vends keys {_who(rejection)} does not accept (check its role and session duration)")

    def status(self) -> list[dict[str, Any]]:
        """One row per table: strategy used, renewals per strategy, expiry, failures (no secrets)."""
        rows = []
        for entry in self.tables():
            state = entry.state()
            rows.append({
                "table": entry.name, "staged": entry.staged, "generation": entry.generation,
                "strategy": entry.last_strategy, "refreshes_by_strategy": dict(entry.refreshes_by_strategy),
                "expires_at_s": state.expires_at_s,
                "next_refresh_s": self.policy.refresh_at(state.fetched_at_s, state.expires_at_s),
                "failures": entry.failures, "last_error": entry.last_error,
                "rejections": entry.rejections, "reactive_refreshes": entry.reactive_refreshes,
                "cached_answers": entry.cached_answers, "not_before_s": entry.not_before_s or None,
                "reactive_wait_max_s": max(entry.reactive_waits_s, default=None),
                "stated_lifetime_s": entry.stated_lifetime_s, "learned_lifetime_s": self.learned_lifetime_s,
            })
        return rows

    # -- background thread ---------------------------------------------------------------------
    def _start_pass(self) -> None:
        """The schedule's pass now rather than at its next interval. Without a thread (tests) it runs
        on the caller, as the shim's scenario replay runs its background executor inline."""
        if self._background:
            self._wake.set()
        else:
            self.scheduler.tick()

    def _ensure_thread(self) -> None:  # under self._lock
        if self._background and not self._closed.is_set() and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._run, name=f"catalog-ext-pyiceberg-refresh-{self.catalog}",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        # A daemon thread that ticks the scheduler; it ends once no table is left to watch.
        while True:
            self._wake.wait(self.policy.check_interval_s)
            self._wake.clear()
            if self._closed.is_set():
                return
            with self._lock:
                if not self._by_handle:
                    self._thread = None
                    return
            try:
                self.scheduler.tick()
            except Exception as exc:  # noqa: BLE001 - the thread must survive a bad pass
                log.warning("catalog-ext: PyIceberg refresh pass failed: %s", redact(str(exc)))

    def close(self) -> None:
        """Stop the background thread (idempotent); FileIOs still renew expired keys on use."""
        self._closed.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
