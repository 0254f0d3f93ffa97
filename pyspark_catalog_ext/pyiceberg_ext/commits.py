"""Table commits from PyIceberg that survive lost, duplicated and refused answers.

One commit = one `POST .../tables/{t}` retried by tenacity, decided by the same rule as Spark's
`CommitGuard`: once an attempt may have reached the catalog, no outcome lets PyIceberg delete
files unless the catalog proves nothing was applied. With an `Idempotency-Key` (when
`/v1/config` advertises `idempotency-key-lifetime`) an ambiguous attempt is repeated under the
same key, never once the key may have expired on the server. Otherwise the table is loaded and
our commit is looked for, recognised by what it added (the table UUID it assigns, the snapshot
ids: random 64-bit, exact):

| after an attempt that...                                 | table loaded                                | outcome |
|----------------------------------------------------------|---------------------------------------------|---------|
| never reached the catalog (refused connection, 429, 401)  | -                                           | retry; out of attempts: failed |
| may have reached it (lost, timeout, 502/503/504, 409)     | ours found                                  | success, once |
|                                                          | ours absent, requirements broken            | failed (another writer won) |
|                                                          | ours absent but may land, or unreadable     | retry; out of attempts: unknown |
| may have reached it (500, 400 on a commit with snapshots) | ours absent but may land, or unreadable     | unknown |
| 409 on a commit that adds nothing recognisable            | -                                           | failed (PyIceberg refreshes and retries) |
| any other non-2xx (401, 403, 404, 419, other 4xx) after an | ours found                                  | success, once |
| attempt that may have reached it (401: new token first)    | ours absent, requirements broken            | failed |
|                                                          | ours absent but may land, unreadable, or nothing recognisable | unknown |

A huge advertised `idempotency-key-lifetime` is clamped to `MAX_KEY_LIFETIME_S` (7 days, as in
Spark): it only bounds how long one key is repeated, and no commit retries that long.

"Failed" is `CommitFailedError` (also PyIceberg's `CommitFailedException`: PyIceberg retries a
conflict, then deletes what it wrote); "unknown" is `CommitStateUnknownError` (every file kept).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from pyiceberg.catalog.rest import TableResponse
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.table import CommitTableResponse
from pyiceberg.table.metadata import TableMetadata
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay, stop_any
from tenacity.stop import stop_base
from tenacity.wait import wait_random_exponential

from pyspark_catalog_ext import knobs
from pyspark_catalog_ext.catalog.idempotency import uuid7
from pyspark_catalog_ext.catalog.rest import error_summary, transport_cause
from pyspark_catalog_ext.errors import CommitFailedError, CommitStateUnknownError, ConfigError

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")

__all__ = ["CommitPolicy", "GuardedCommit", "PyIcebergCommitFailedError", "PyIcebergCommitStateUnknownError",
           "own_commit_landed"]

IDEMPOTENCY_HEADER = "Idempotency-Key"
# Beyond total-timeout (at most a day) no commit repeats its key, so clamping here changes no
# decision; it keeps absurd advertised values (P999999999D) out of the arithmetic.
MAX_KEY_LIFETIME_S = 7 * 86400.0


class PyIcebergCommitFailedError(CommitFailedError, CommitFailedException):
    """`errors.CommitFailedError` that PyIceberg's own conflict handling also recognises."""


class PyIcebergCommitStateUnknownError(CommitStateUnknownError, CommitStateUnknownException):
    """`staging.CommitStateUnknownError` that is also PyIceberg's `CommitStateUnknownException`."""


@dataclass(frozen=True)
class CommitPolicy:
    """Retry bounds and Idempotency-Key use for one commit: the catalog properties
    `catalog-ext.commit.*`, with the defaults and ranges of the knob spec Spark's shim reads too."""

    max_attempts: int = knobs.read_int({}, "catalog-ext.commit.max-attempts")
    base_delay_s: float = knobs.read_int({}, "catalog-ext.commit.base-delay-ms") / 1000.0
    max_delay_s: float = knobs.read_int({}, "catalog-ext.commit.max-delay-ms") / 1000.0
    total_timeout_s: float = knobs.read_int({}, "catalog-ext.commit.total-timeout-ms") / 1000.0
    request_timeout_s: float = 60.0
    idempotency: str = knobs.read_choice({}, "catalog-ext.commit.idempotency")  # auto, always or never

    @staticmethod
    def from_properties(props: Mapping[str, Any]) -> CommitPolicy:
        """From `catalog-ext.commit.*`; an unknown name or a bad value is a one-line `ConfigError`,
        word for word what the JVM says."""
        unknown = knobs.unknown_names(props, "commit")
        if unknown:
            known = ", ".join(sorted(n for n in knobs.spec() if n.startswith("catalog-ext.commit.")))
            raise ConfigError(f"Unknown catalog property {unknown[0]}; known: {known}")
        return CommitPolicy(
            max_attempts=knobs.read_int(props, "catalog-ext.commit.max-attempts"),
            base_delay_s=knobs.read_int(props, "catalog-ext.commit.base-delay-ms") / 1000.0,
            max_delay_s=knobs.read_int(props, "catalog-ext.commit.max-delay-ms") / 1000.0,
            total_timeout_s=knobs.read_int(props, "catalog-ext.commit.total-timeout-ms") / 1000.0,
            idempotency=knobs.read_choice(props, "catalog-ext.commit.idempotency"),
        )

    def sends_keys(self, advertised_lifetime_s: float | None) -> bool:
        """Whether requests carry an Idempotency-Key (as the JVM's CommitGuard decides)."""
        return self.idempotency == "always" or (self.idempotency == "auto" and advertised_lifetime_s is not None)


class _Again(Exception):
    """This attempt proved nothing was applied (or it carries a key): try again."""


def own_commit_landed(metadata: TableMetadata | None, requirements: tuple, updates: tuple) -> bool | None:
    """Does the table's current metadata contain our commit? None when the commit has no mark to look for."""
    from pyiceberg.table.update import AddSnapshotUpdate, AssertTableUUID, AssignUUIDUpdate

    expected_uuid = next((str(u.uuid) for u in updates if isinstance(u, AssignUUIDUpdate)), None)
    expected_uuid = expected_uuid or next((str(r.uuid) for r in requirements if isinstance(r, AssertTableUUID)), None)
    snapshot_ids = [u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshotUpdate)]
    if not _recognisable(updates):
        return None  # e.g. a schema change only: nothing of ours is recognisable
    if metadata is None:
        return False
    if expected_uuid and str(metadata.table_uuid) != expected_uuid:
        return False
    present = {s.snapshot_id for s in metadata.snapshots}
    return all(sid in present for sid in snapshot_ids)


def _recognisable(updates: tuple) -> bool:
    """Does the commit add something we can find afterwards (a new table's UUID, a snapshot)?"""
    from pyiceberg.table.update import AddSnapshotUpdate, AssignUUIDUpdate

    return any(isinstance(u, (AddSnapshotUpdate, AssignUUIDUpdate)) for u in updates)


class GuardedCommit:
    """One logical commit: `run()` returns the catalog's answer or raises one of the two errors."""

    def __init__(self, session: requests.Session, url: str, body: bytes, *, table: str,
                 requirements: tuple, updates: tuple, load_metadata: Callable[[], TableResponse | None],
                 idempotency_lifetime_s: float | None, policy: CommitPolicy = CommitPolicy(),
                 headers: dict | None = None, on_401: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.session, self.url, self.body, self.table = session, url, body, table
        self.requirements, self.updates = requirements, updates
        self.load_metadata = load_metadata
        self.key = str(uuid7()) if policy.sends_keys(idempotency_lifetime_s) else None
        # De-duplication is trusted (a lost answer repeated under the key) only where advertised.
        self.key_lifetime_s = (min(idempotency_lifetime_s, MAX_KEY_LIFETIME_S)
                               if self.key is not None and idempotency_lifetime_s is not None else None)
        self.policy = policy
        self.headers = dict(headers or {})
        self.on_401 = on_401
        self.clock, self.sleep = clock, sleep
        self.maybe_applied = False  # some attempt may have reached the catalog and been applied
        self.attempts = 0
        self.last_cause = ""
        self.reconciled = False  # evidence for tests and logs

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> CommitTableResponse:
        started = self.clock()

        guarded = self

        class key_may_expire(stop_base):
            """Never retry under a key the server may have forgotten: the replay would apply again."""

            def __call__(self, retry_state: RetryCallState) -> bool:
                life = guarded.key_lifetime_s
                return bool(guarded.key) and life is not None and guarded.clock() - started >= 0.9 * life

        retrying = Retrying(
            stop=stop_any(stop_after_attempt(self.policy.max_attempts), stop_after_delay(self.policy.total_timeout_s),
                          key_may_expire()),
            wait=wait_random_exponential(multiplier=self.policy.base_delay_s, max=self.policy.max_delay_s),
            retry=retry_if_exception_type(_Again), reraise=True, sleep=self.sleep,
        )
        try:
            return retrying(self._attempt)
        except _Again:
            cause = f"{self.last_cause} after {self.attempts} attempts"
            if self.maybe_applied:
                return self._settle(cause, retryable=False)
            raise PyIcebergCommitFailedError(
                f"commit to {self.table} was refused {self.attempts} times ({self.last_cause}); nothing was "
                "published: retry later") from None

    def _attempt(self) -> CommitTableResponse:
        self.attempts += 1
        headers = dict(self.headers)
        if self.key:
            headers[IDEMPOTENCY_HEADER] = self.key
        try:
            resp = self.session.post(self.url, data=self.body, headers=headers, timeout=(5.0, self.policy.request_timeout_s))
        except requests.RequestException as exc:
            cause, reached = transport_cause(exc)
            self.last_cause = cause
            if not reached:
                raise _Again(cause) from None
            return self._maybe_applied(cause, retryable=True)
        status = resp.status_code
        self.last_cause = f"HTTP {status}"
        if status == 200:
            return CommitTableResponse.model_validate_json(resp.content)
        if status == 429:  # the catalog says it did not take it
            raise _Again(self.last_cause)
        if status == 401 and self.on_401 is not None and self.attempts == 1:
            self.on_401()  # the token expired: not applied; fetch a new one and go again
            raise _Again(self.last_cause)
        recognisable = _recognisable(self.updates)
        if status in (502, 503, 504):  # a gateway may have forwarded it, or answered after the catalog applied it
            return self._maybe_applied(self.last_cause, retryable=True)
        if status == 409:
            if not recognisable:  # a metadata-only conflict: PyIceberg's own refresh-and-retry
                raise PyIcebergCommitFailedError(
                    f"the commit to {self.table} conflicts with the table (HTTP 409 {error_summary(resp)}); nothing was published")
            # Our own commit, duplicated on the way (or retried underneath), answers 409 too: look,
            # even with a key (a conflict would come back under the same key every time).
            self.maybe_applied = True
            return self._settle(f"HTTP 409 {error_summary(resp)}", retryable=True)
        if (status >= 500 and status not in (501, 505)) or (status == 400 and recognisable):
            # Applied, then failed? (Polaris <= 1.7 answers 400 for an unknown commit state.)
            return self._maybe_applied(f"HTTP {status} {error_summary(resp)}", retryable=False)
        if self.maybe_applied:
            # A refusal now says nothing about the earlier attempt: look at the table before
            # PyIceberg may delete anything (401: with a new token, or the load fails too: unknown).
            if status == 401 and self.on_401 is not None:
                try:
                    self.on_401()
                except Exception:  # noqa: BLE001 - the load below fails too and the answer is unknown
                    log.debug("catalog-ext: token refresh after a 401 failed", exc_info=True)
            return self._settle(f"HTTP {status} {error_summary(resp)} after an attempt that may have been applied",
                                retryable=False)
        raise PyIcebergCommitFailedError(
            f"the catalog refused the commit to {self.table} (HTTP {status} {error_summary(resp)}); nothing was published")

    # -- reconciliation ----------------------------------------------------------------------------
    def _maybe_applied(self, cause: str, *, retryable: bool) -> CommitTableResponse:
        self.maybe_applied = True
        self.last_cause = cause
        if self.key and self.key_lifetime_s is not None and retryable:
            raise _Again(cause)  # the same key: the catalog replays its answer if it applied it
        return self._settle(cause, retryable=retryable)

    def _settle(self, cause: str, *, retryable: bool) -> CommitTableResponse:
        """Load the table: ours there is success; ours impossible is failed; else retry or unknown."""
        self.reconciled = True
        try:
            loaded = self.load_metadata()
        except Exception as exc:  # noqa: BLE001 - cannot look: we cannot tell
            if retryable:
                raise _Again(cause) from None
            raise PyIcebergCommitStateUnknownError(
                f"the answer to the commit of {self.table} was lost ({cause}) and loading the table failed "
                f"({type(exc).__name__}); every file is kept: check the table before retrying") from None
        metadata = loaded.metadata if loaded is not None else None
        landed = own_commit_landed(metadata, self.requirements, self.updates)
        if landed and loaded is not None and loaded.metadata_location:
            log.info("catalog-ext: commit to %s landed although its answer was %s (reconciled)", self.table, cause)
            return CommitTableResponse.model_validate({"metadata": loaded.metadata, "metadata-location": loaded.metadata_location})
        if landed is False and not _requirements_hold(self.requirements, metadata):
            # Ours is not there and can never land now: another writer won (PyIceberg may retry).
            raise PyIcebergCommitFailedError(
                f"the commit to {self.table} did not land and the table has moved on ({cause}); nothing was "
                "published: reload the table and retry")
        if retryable:
            raise _Again(cause)  # may still land: repeating is safe, the requirements make a repeat 409
        raise PyIcebergCommitStateUnknownError(
            f"the commit to {self.table} may or may not have landed ({cause}; the table does not show it"
            f"{'' if landed is False else ', and the commit adds nothing recognisable'}); every file is kept: "
            "check the table before retrying")


def _requirements_hold(requirements: tuple, metadata: TableMetadata | None) -> bool:
    """Would the catalog still accept a commit with these requirements? (PyIceberg's own checks.)"""
    try:
        for requirement in requirements:
            requirement.validate(metadata)
    except CommitFailedException:
        return False
    return True
