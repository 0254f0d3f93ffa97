"""Table commits from PyIceberg that survive lost, duplicated and refused answers.

One commit = one `POST .../tables/{t}` retried by tenacity. With an `Idempotency-Key` (when
`/v1/config` advertises `idempotency-key-lifetime`) every retry reuses the key, so an ambiguous
failure (connection lost after sending, 502/504) is simply repeated, and never once the key may
have expired on the server. Without one, an ambiguous failure is not repeated blindly: the table
is loaded and our commit is looked for, recognised by what it added (the table UUID it assigns,
the snapshot ids: random 64-bit, exact), as Spark's `CommitGuard` does. A 409 is reconciled too:
it may be the answer to a hidden duplicate of our own commit.

The caller sees the commit response once, or `CommitFailedError` (we know nothing landed) or
`CommitStateUnknownError` (we cannot tell; every file is kept).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Optional

import requests
from pyiceberg.catalog.rest import TableResponse
from pyiceberg.exceptions import CommitFailedException, CommitStateUnknownException
from pyiceberg.table import CommitTableResponse
from pyiceberg.table.metadata import TableMetadata
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay
from tenacity.wait import wait_random_exponential

from ..catalog_client import _classify_transport, _error_summary
from ..errors import CommitFailedError
from ..retry import uuid7
from ..staging import CommitStateUnknownError

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")

__all__ = ["CommitPolicy", "GuardedCommit", "PyIcebergCommitFailedError", "PyIcebergCommitStateUnknownError",
           "own_commit_landed"]

IDEMPOTENCY_HEADER = "Idempotency-Key"


class PyIcebergCommitFailedError(CommitFailedError, CommitFailedException):
    """`errors.CommitFailedError` that PyIceberg's own conflict handling also recognises."""


class PyIcebergCommitStateUnknownError(CommitStateUnknownError, CommitStateUnknownException):
    """`staging.CommitStateUnknownError` that is also PyIceberg's `CommitStateUnknownException`."""


@dataclass(frozen=True)
class CommitPolicy:
    """Retry bounds for one commit (catalog properties `catalog-ext.commit.*`, as for Spark)."""

    max_attempts: int = 5
    base_delay_s: float = 0.2
    max_delay_s: float = 5.0
    total_timeout_s: float = 60.0
    request_timeout_s: float = 60.0

    @staticmethod
    def from_properties(props: dict) -> "CommitPolicy":
        def seconds(key: str, default: float) -> float:
            raw = props.get(f"catalog-ext.commit.{key}")
            return float(raw) / 1000.0 if raw not in (None, "") else default

        return CommitPolicy(
            max_attempts=int(props.get("catalog-ext.commit.max-attempts") or 5),
            base_delay_s=seconds("base-delay-ms", 0.2),
            max_delay_s=seconds("max-delay-ms", 5.0),
            total_timeout_s=seconds("total-timeout-ms", 60.0),
        )


class _Again(Exception):
    """This attempt proved nothing was applied (or it carries a key): try again."""


def own_commit_landed(metadata: Optional[TableMetadata], requirements: tuple, updates: tuple) -> Optional[bool]:
    """Does the table's current metadata contain our commit? None when the commit has no mark to look for."""
    from pyiceberg.table.update import AddSnapshotUpdate, AssertTableUUID, AssignUUIDUpdate

    expected_uuid = next((str(u.uuid) for u in updates if isinstance(u, AssignUUIDUpdate)), None)
    expected_uuid = expected_uuid or next((str(r.uuid) for r in requirements if isinstance(r, AssertTableUUID)), None)
    snapshot_ids = [u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshotUpdate)]
    creates = any(isinstance(u, AssignUUIDUpdate) for u in updates)
    if not snapshot_ids and not creates:
        return None  # e.g. a schema change only: nothing of ours is recognisable
    if metadata is None:
        return False
    if expected_uuid and str(metadata.table_uuid) != expected_uuid:
        return False
    present = {s.snapshot_id for s in metadata.snapshots}
    return all(sid in present for sid in snapshot_ids)


class GuardedCommit:
    """One logical commit: `run()` returns the catalog's answer or raises one of the two errors."""

    def __init__(self, session: requests.Session, url: str, body: bytes, *, table: str,
                 requirements: tuple, updates: tuple, load_metadata: Callable[[], Optional[TableResponse]],
                 idempotency_lifetime_s: Optional[float], policy: CommitPolicy = CommitPolicy(),
                 headers: Optional[dict] = None, on_401: Optional[Callable[[], None]] = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.session, self.url, self.body, self.table = session, url, body, table
        self.requirements, self.updates = requirements, updates
        self.load_metadata = load_metadata
        self.key = str(uuid7()) if idempotency_lifetime_s is not None else None
        self.key_lifetime_s = idempotency_lifetime_s
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

        def key_may_expire(state: RetryCallState) -> bool:
            # Never retry under a key the server may have forgotten: the replay would apply again.
            life = self.key_lifetime_s
            return bool(self.key) and life is not None and self.clock() - started >= 0.9 * life

        retrying = Retrying(
            stop=stop_after_attempt(self.policy.max_attempts) | stop_after_delay(self.policy.total_timeout_s) | key_may_expire,
            wait=wait_random_exponential(multiplier=self.policy.base_delay_s, max=self.policy.max_delay_s),
            retry=retry_if_exception_type(_Again), reraise=True, sleep=self.sleep,
        )
        try:
            return retrying(self._attempt)
        except _Again:
            if self.maybe_applied:
                return self._reconcile(f"{self.last_cause} after {self.attempts} attempts", proven_not_applied=False)
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
            cause, reached = _classify_transport(exc)
            self.last_cause = cause
            if not reached:
                raise _Again(cause) from None
            self.maybe_applied = True
            if self.key:
                raise _Again(cause) from None
            return self._reconcile(cause, proven_not_applied=False)
        status = resp.status_code
        self.last_cause = f"HTTP {status}"
        if status == 200:
            return CommitTableResponse.model_validate_json(resp.content)
        if status in (429, 503):  # the catalog says it did not apply it
            raise _Again(self.last_cause)
        if status == 401 and self.on_401 is not None and self.attempts == 1:
            self.on_401()  # the token expired: not applied; fetch a new one and go again
            raise _Again(self.last_cause)
        if status in (502, 504):  # a gateway may have forwarded it
            self.maybe_applied = True
            if self.key:
                raise _Again(self.last_cause)
            return self._reconcile(self.last_cause, proven_not_applied=False)
        if status >= 500 and status not in (501, 505):
            self.maybe_applied = True  # applied, then failed? Iceberg calls this state unknown
            return self._reconcile(f"HTTP {status} {_error_summary(resp)}", proven_not_applied=False)
        if status == 409:
            # Our own commit, duplicated on the way (or retried underneath), answers 409 too.
            return self._reconcile(f"HTTP 409 {_error_summary(resp)}", proven_not_applied=not self.maybe_applied)
        raise PyIcebergCommitFailedError(
            f"the catalog refused the commit to {self.table} (HTTP {status} {_error_summary(resp)}); nothing was published")

    # -- reconciliation ----------------------------------------------------------------------------
    def _reconcile(self, cause: str, *, proven_not_applied: bool) -> CommitTableResponse:
        self.reconciled = True
        try:
            metadata_response = self.load_metadata()
        except Exception as exc:  # noqa: BLE001 - cannot look: we cannot tell
            if proven_not_applied:
                raise PyIcebergCommitFailedError(f"commit to {self.table} was refused ({cause})") from None
            raise PyIcebergCommitStateUnknownError(
                f"the answer to the commit of {self.table} was lost ({cause}) and loading the table failed "
                f"({type(exc).__name__}); every file is kept: check the table before retrying") from None
        landed = own_commit_landed(metadata_response.metadata if metadata_response else None,
                                   self.requirements, self.updates)
        if landed and metadata_response is not None and metadata_response.metadata_location:
            log.info("catalog-ext: commit to %s landed although its answer was %s (reconciled)", self.table, cause)
            return CommitTableResponse(metadata=metadata_response.metadata,
                                       metadata_location=metadata_response.metadata_location)
        if proven_not_applied or (landed is False and not self.maybe_applied):
            raise PyIcebergCommitFailedError(
                f"the catalog refused the commit to {self.table} ({cause}); nothing was published: reload the table and retry")
        raise PyIcebergCommitStateUnknownError(
            f"the commit to {self.table} may or may not have landed ({cause}; the table does not show it"
            f"{'' if landed is False else ', and the commit adds nothing recognisable'}); every file is kept: "
            "check the table before retrying")
