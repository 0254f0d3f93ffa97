"""Table commits from PyIceberg that survive lost, duplicated and refused answers.

One commit = one `POST .../tables/{t}` retried by tenacity, each failed attempt decided by
`commit_decision.decide`, the rule Spark's `CommitGuard` follows too (`resources/commit-decisions.json`).
Once an attempt may have reached the catalog, no outcome lets PyIceberg delete files unless the
catalog proves nothing was applied: an ambiguous attempt is repeated under the same
`Idempotency-Key` where a lifetime is advertised, else the table is loaded and our commit looked
for. No redirect is followed. "Failed" is `CommitFailedError` (also PyIceberg's
`CommitFailedException`); "unknown" is `CommitStateUnknownError` (every file kept).

Why: docs/pyiceberg.md, section 'PyIceberg jobs' ("Safe commits", "No hidden re-send").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

import requests
from pyiceberg.catalog.rest import TableResponse
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.table import CommitTableResponse
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import AssertCreate
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay, stop_any
from tenacity.stop import stop_base
from tenacity.wait import wait_random_exponential

from pyspark_catalog_ext.catalog.answers import error_summary, transport_cause
from pyspark_catalog_ext.commit.decision import (
    Answer,
    Facts,
    Kind,
    Landed,
    Outcome,
    answer_of_status,
    decide,
    landed_state,
    needs_reconciliation,
)
from pyspark_catalog_ext.commit.idempotency import uuid7
from pyspark_catalog_ext.commit.policy import CommitPolicy
from pyspark_catalog_ext.errors import CatalogRedirectError, CommitFailedError, CommitStateUnknownError

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


class _Again(Exception):
    """The decision for this attempt is to try again."""


def own_commit_landed(metadata: TableMetadata | None, requirements: tuple, updates: tuple) -> Landed:
    """Did our commit land, judging by the table's current metadata (None: the table is gone)?"""
    from pyiceberg.table.update import AddSnapshotUpdate, AssignUUIDUpdate

    assigned_uuid = next((str(u.uuid) for u in updates if isinstance(u, AssignUUIDUpdate)), None)
    snapshot_ids = [u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshotUpdate)]
    present = {s.snapshot_id for s in metadata.snapshots} if metadata is not None else set()
    return landed_state(
        create=assigned_uuid is not None, exists=metadata is not None,
        uuid_matches=metadata is not None and str(metadata.table_uuid) == assigned_uuid,
        found=sum(1 for sid in snapshot_ids if sid in present), expected=len(snapshot_ids),
        requirements_hold=_requirements_hold(requirements, metadata))


def _recognisable(updates: tuple) -> bool:
    """Does the commit add something we can find afterwards (a new table's UUID, a snapshot)?"""
    from pyiceberg.table.update import AddSnapshotUpdate, AssignUUIDUpdate

    return any(isinstance(u, (AddSnapshotUpdate, AssignUUIDUpdate)) for u in updates)


class GuardedCommit:
    """One logical commit: `run()` returns the catalog's answer or raises one of the two errors."""

    def __init__(self, session: requests.Session, url: str, body: bytes, *, table: str,
                 requirements: tuple, updates: tuple, load_metadata: Callable[[], TableResponse | None],
                 idempotency_lifetime_s: float | None, policy: CommitPolicy | None = None,
                 headers: dict | None = None, on_401: Callable[[], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.session, self.url, self.body, self.table = session, url, body, table
        self.requirements, self.updates = requirements, updates
        self.kind = Kind.SNAPSHOT if _recognisable(updates) else Kind.PLAIN
        self.load_metadata = load_metadata
        policy = policy or CommitPolicy()
        self.key = str(uuid7()) if policy.sends_keys(idempotency_lifetime_s) else None
        # De-duplication is trusted (a lost answer repeated under the key) only where advertised.
        self.key_lifetime_s = (min(idempotency_lifetime_s, MAX_KEY_LIFETIME_S)
                               if self.key is not None and idempotency_lifetime_s is not None else None)
        # Whether a catalog that advertises a lifetime replays this commit (commit-decisions.json
        # `covered`): the profile's de-duplicated operations, else the narrowest set, which leaves out
        # a staged create's commit (assert-create: Polaris 1.7.0 answers its repeat 409).
        creates = any(isinstance(r, AssertCreate) for r in requirements)
        self.covered = policy.deduplicates("stagedCreateCommit" if creates else "updateTable")
        self.policy = policy
        self.headers = dict(headers or {})
        self.on_401 = on_401
        self.clock, self.sleep = clock, sleep
        self.maybe_applied = False  # some attempt may have reached the catalog and been applied
        self.attempts = 0
        self.last_cause = ""
        self.last_facts: Facts | None = None  # the last failed attempt's evidence, before reconciliation
        self.load_error = ""  # why the last reconciliation could not load the table
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
            # No attempt left: the last attempt's evidence decides again, knowing that.
            assert self.last_facts is not None  # every _Again comes from _decide
            return self._decide(replace(self.last_facts, can_retry=False),
                                f"{self.last_cause} after {self.attempts} attempts")

    def _attempt(self) -> CommitTableResponse:
        self.attempts += 1
        headers = dict(self.headers)
        if self.key:
            headers[IDEMPOTENCY_HEADER] = self.key
        try:
            resp = self.session.post(self.url, data=self.body, headers=headers, timeout=(5.0, self.policy.request_timeout_s),
                                     allow_redirects=False)
        except requests.RequestException as exc:
            cause, reached = transport_cause(exc)
            return self._decide(self._facts(Answer.LOST if reached else Answer.REFUSED), cause)
        except CatalogRedirectError as exc:  # the session's refusal of a 3xx: nothing was re-sent
            return self._decide(self._facts(Answer.SERVER_ERROR),
                                f"HTTP {exc.status} redirect to {exc.location or 'no location'}, not followed")
        status = resp.status_code
        if status == 200:
            return CommitTableResponse.model_validate_json(resp.content)
        # Neither 200 nor an error status (a 3xx without Location, 202, 204): it may have been
        # processed, so the table's HTTP 500 rows decide (load the table; else unknown).
        answer = answer_of_status(status) or Answer.SERVER_ERROR
        facts = self._facts(answer)
        cause = f"HTTP {status} {error_summary(resp)}"
        if answer.refusal and facts.earlier_may_have_reached:
            cause += " after an attempt that may have been applied"
        if status == 401 and self.on_401 is not None and self.attempts == 1:
            self.on_401()  # the token expired, nothing was applied: fetch a new one and go again
            self.last_facts, self.last_cause = facts, cause
            raise _Again(cause)
        return self._decide(facts, cause)

    def _facts(self, answer: Answer) -> Facts:
        """This attempt's evidence; one more attempt is assumed allowed (tenacity's stop says otherwise)."""
        return Facts(self.kind, answer, self.maybe_applied, deduplicated=self.key_lifetime_s is not None and self.covered)

    def _decide(self, facts: Facts, cause: str) -> CommitTableResponse:
        """Reconcile when the rule needs it, then act on `commit_decision.decide`."""
        self.last_facts, self.last_cause = facts, cause
        loaded = None
        if needs_reconciliation(facts):
            if facts.answer is Answer.UNAUTHORIZED and self.on_401 is not None:
                try:  # look with a new token (if this fails too, the load fails: unknown)
                    self.on_401()
                except Exception:  # noqa: BLE001 - the load below fails too and the answer is unknown
                    log.debug("catalog-ext: token refresh after a 401 failed", exc_info=True)
            landed, loaded = self._reconcile()
            facts = facts.with_landed(landed)
        outcome = decide(facts)
        log.debug("catalog-ext: commit to %s: %s -> %s", self.table, facts, outcome.value)
        if outcome is Outcome.RETRY:
            self.maybe_applied = facts.may_have_reached()
            raise _Again(cause)
        if outcome is Outcome.SUCCESS and loaded is not None:
            log.info("catalog-ext: commit to %s landed although its answer was %s (reconciled)", self.table, cause)
            return CommitTableResponse.model_validate({"metadata": loaded.metadata, "metadata-location": loaded.metadata_location})
        if outcome is Outcome.FAILED:
            raise PyIcebergCommitFailedError(self._failed_message(facts, cause))
        if facts.landed is Landed.UNKNOWN and self.load_error:
            raise PyIcebergCommitStateUnknownError(
                f"the answer to the commit of {self.table} was lost ({cause}) and loading the table failed "
                f"({self.load_error}); every file is kept: check the table before retrying")
        raise PyIcebergCommitStateUnknownError(
            f"the commit to {self.table} may or may not have landed ({cause}; "
            f"{'the table does not show it' if self.kind is Kind.SNAPSHOT else 'the commit adds nothing recognisable'}"
            "); every file is kept: check the table before retrying")

    def _failed_message(self, facts: Facts, cause: str) -> str:
        if facts.landed is Landed.NO:  # ours can never land now: another writer won (PyIceberg may retry)
            return (f"the commit to {self.table} did not land and the table has moved on ({cause}); nothing was "
                    "published: reload the table and retry")
        if facts.answer.retryable:
            return f"the catalog did not take the commit to {self.table} ({cause}); nothing was published: retry later"
        if facts.answer is Answer.CONFLICT:  # a metadata-only conflict: PyIceberg's own refresh-and-retry
            return f"the commit to {self.table} conflicts with the table ({cause}); nothing was published"
        return f"the catalog refused the commit to {self.table} ({cause}); nothing was published"

    # -- reconciliation ----------------------------------------------------------------------------
    def _reconcile(self) -> tuple[Landed, TableResponse | None]:
        """Load the table and look for our commit (a failed load: unknown)."""
        self.reconciled = True
        self.load_error = ""
        try:
            loaded = self.load_metadata()
        except Exception as exc:  # noqa: BLE001 - cannot look: we cannot tell
            self.load_error = type(exc).__name__
            return Landed.UNKNOWN, None
        landed = own_commit_landed(loaded.metadata if loaded is not None else None, self.requirements, self.updates)
        if landed is Landed.YES and (loaded is None or not loaded.metadata_location):
            return Landed.UNKNOWN, None  # ours is there but the answer cannot be built from this load
        return landed, loaded


def _requirements_hold(requirements: tuple, metadata: TableMetadata | None) -> bool:
    """Would the catalog still accept a commit with these requirements? (PyIceberg's own checks.)"""
    try:
        for requirement in requirements:
            requirement.validate(metadata)
    except CommitFailedException:
        return False
    return True
