"""The commit rule of PyIceberg's guarded commit: what to do after an attempt that did not
succeed, as a pure function of the evidence (the Python twin of the shim's `CommitDecision`).

Both runtimes are tested row by row against one table, `resources/commit-decisions.json`
(tests/unit/commit/test_commit_decisions.py here, CommitDecisionTest.java in the shim), and
docs/commits.md shows that table as rendered by `markdown_table()`. The rule: once any attempt may
have reached the catalog, no outcome lets the runtime delete files unless the catalog proves that
nothing was applied (`Landed.NO`); an ambiguous commit is unknown and keeps its files.

Java twin: `io.catalogext.shim.commit.CommitDecision`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark_catalog_ext import markdown

__all__ = ["TABLE_PATH", "Kind", "Answer", "Landed", "Outcome", "Facts", "answer_of_status", "may_have_reached",
           "needs_reconciliation", "decide", "landed_state", "table", "markdown_table"]

TABLE_PATH = Path(__file__).resolve().parent.parent / "resources" / "commit-decisions.json"


class Kind(Enum):
    """What is being sent (the table's `commit`). PyIceberg's guard sends table commits, its face
    (`catalog.lost_answers`) the other mutations; stage-create rows are the JVM's."""

    SNAPSHOT = "snapshot"  # adds snapshots or creates a table: recognisable on the table afterwards
    PLAIN = "plain"  # adds nothing recognisable: schema/property change, expire-snapshots
    MUTATION = "mutation"  # create, drop, rename, register, namespaces: recognised by looking


class Answer(Enum):
    """One attempt's answer (the JVM's `CommitDecision.Answer`)."""

    REFUSED = "refused"  # connection refused / connect timeout: never reached the catalog
    LOST = "lost"  # read timeout or broken connection after sending: may have been applied
    THROTTLED = "throttled"  # 429: refused before processing
    UNAVAILABLE = "unavailable"  # 503: on a commit, state unknown (a gateway may have forwarded it)
    GATEWAY = "gateway"  # 502/504
    CONFLICT = "conflict"  # 409
    SERVER_ERROR = "server-error"  # 500 and any 5xx but 502/503/504: applied, then failed?
    BAD_REQUEST = "bad-request"  # 400: Polaris <= 1.7.0 answers an unknown commit state so (apache/polaris#5145)
    UNAUTHORIZED = "unauthorized"  # 401
    FORBIDDEN = "forbidden"  # 403
    NOT_FOUND = "not-found"  # 404
    AUTH_TIMEOUT = "auth-timeout"  # 419
    CLIENT_ERROR = "client-error"  # any other 4xx
    REDIRECT = "redirect"  # 3xx, never followed (the transport refuses it): never repeated

    @property
    def retryable(self) -> bool:
        return self in _RETRYABLE

    @property
    def refusal(self) -> bool:
        """A 4xx other than 400/409/429: this attempt was turned away, not applied."""
        return self in _REFUSALS


_RETRYABLE = frozenset({Answer.REFUSED, Answer.LOST, Answer.THROTTLED, Answer.UNAVAILABLE, Answer.GATEWAY})
_REFUSALS = frozenset({Answer.UNAUTHORIZED, Answer.FORBIDDEN, Answer.NOT_FOUND, Answer.AUTH_TIMEOUT,
                       Answer.CLIENT_ERROR})
_BY_STATUS = {400: Answer.BAD_REQUEST, 401: Answer.UNAUTHORIZED, 403: Answer.FORBIDDEN, 404: Answer.NOT_FOUND,
              409: Answer.CONFLICT, 419: Answer.AUTH_TIMEOUT, 429: Answer.THROTTLED, 500: Answer.SERVER_ERROR,
              502: Answer.GATEWAY, 503: Answer.UNAVAILABLE, 504: Answer.GATEWAY}


def answer_of_status(status: int) -> Answer | None:
    """The answer for an HTTP error status; None for a status that is no error (1xx-3xx)."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if 400 <= status < 500:
        return Answer.CLIENT_ERROR
    return Answer.SERVER_ERROR if status > 500 else None  # 501, 505, ...: applied, then failed?


class Landed(Enum):
    """Reconciliation: did our commit land, judging by the table as the catalog shows it now."""

    YES = "yes"  # everything we added is there
    NO = "no"  # ours is absent and its requirements no longer hold: it can never land
    PENDING = "pending"  # ours is absent but may still land (in flight, lagging loads)
    UNKNOWN = "unknown"  # unreadable table, nothing to recognise, or partly there
    NOT_CHECKED = "not-checked"


class Outcome(Enum):
    RETRY = "retry"  # again, under the same Idempotency-Key when one is sent
    SUCCESS = "success"  # ours landed: report it once as success
    FAILED = "failed"  # CommitFailedError: PyIceberg may delete the commit's files
    UNKNOWN = "unknown"  # CommitStateUnknownError: every file is kept


@dataclass(frozen=True)
class Facts:
    """Everything the decision depends on."""

    kind: Kind
    answer: Answer
    earlier_may_have_reached: bool  # an earlier attempt of this commit may have been applied
    landed: Landed = Landed.NOT_CHECKED
    # We send a key, the catalog advertised idempotency-key-lifetime and de-duplicates this operation
    # (Polaris 1.7.0 advertises one lifetime but replays only createTable and updateTable without assert-create).
    deduplicated: bool = False
    can_retry: bool = True  # attempts, total time and the key lifetime allow one more

    def may_have_reached(self) -> bool:
        if self.kind is Kind.MUTATION and self.answer is Answer.UNAVAILABLE:
            return self.earlier_may_have_reached  # a 503 on a non-commit keeps its meaning: not processed
        return self.earlier_may_have_reached or may_have_reached(self.answer)

    def with_landed(self, landed: Landed) -> Facts:
        return replace(self, landed=landed)


def may_have_reached(answer: Answer) -> bool:
    """Whether a commit attempt with this answer may have reached the catalog (and been applied)."""
    return not (answer in (Answer.REFUSED, Answer.THROTTLED) or answer.refusal)


def needs_reconciliation(f: Facts) -> bool:
    """Whether to look at the catalog before `decide`: a snapshot commit's table, or what a mutation
    changes (a plain commit has nothing to recognise)."""
    if f.kind is Kind.MUTATION:
        return _mutation_needs_look(f)
    if f.kind is not Kind.SNAPSHOT or not f.may_have_reached():
        return False
    if not f.answer.retryable:
        return True  # 409 / 500 / 400 / a refusal after a possible apply: was it ours?
    # A de-duplicating catalog replays its stored answer to a keyed retry: look only when no retry
    # is left; without one, look before repeating.
    return not f.deduplicated or not f.can_retry


def _mutation_needs_look(f: Facts) -> bool:
    """A mutation that may have been applied is looked at, never repeated blindly, unless the catalog
    de-duplicates it: a lost or gateway answer, and any error answer after a possible apply."""
    if not f.may_have_reached():
        return False
    if f.answer.retryable:
        return not f.deduplicated or not f.can_retry
    return f.earlier_may_have_reached and f.answer is not Answer.REDIRECT


def decide(f: Facts) -> Outcome:
    """The outcome for this evidence (`f.landed` from the reconciliation when it was needed)."""
    if f.kind is Kind.PLAIN:
        return _plain_commit(f)
    if f.kind is Kind.MUTATION:
        return _mutation(f)
    if f.landed is Landed.YES:
        return Outcome.SUCCESS
    if not f.may_have_reached():
        # Nothing can have been applied: a refusal is final, the rest may be repeated.
        return Outcome.RETRY if f.answer.retryable and f.can_retry else Outcome.FAILED
    if f.landed is Landed.NO:
        return Outcome.FAILED  # the catalog proves ours can never land
    # Pending, unreadable or not looked at after a possible apply. Repeating is safe: the commit
    # carries its requirements, so it never applies twice (a late twin answers 409).
    repeatable = f.answer.retryable or f.answer is Answer.CONFLICT
    return Outcome.RETRY if repeatable and f.can_retry else Outcome.UNKNOWN


def _plain_commit(f: Facts) -> Outcome:
    if f.answer is Answer.CONFLICT:
        return Outcome.FAILED  # adds no files: PyIceberg's own refresh-and-retry runs
    if f.answer.retryable:
        if f.can_retry:
            return Outcome.RETRY
        return Outcome.UNKNOWN if f.may_have_reached() else Outcome.FAILED
    if (f.answer is Answer.BAD_REQUEST or f.answer.refusal) and not f.earlier_may_have_reached:
        return Outcome.FAILED  # a first 4xx: the request itself was refused
    return Outcome.UNKNOWN  # 5xx, or a 4xx after an attempt that may have been applied


def _mutation(f: Facts) -> Outcome:
    if f.landed is Landed.YES:
        return Outcome.SUCCESS  # the change is there: our lost answer's, reported once
    if not f.may_have_reached():
        return Outcome.RETRY if f.answer.retryable and f.can_retry else Outcome.FAILED
    if f.landed is Landed.NOT_CHECKED:  # a first error answer, or a de-duplicated keyed repeat
        return Outcome.RETRY if f.answer.retryable and f.deduplicated and f.can_retry else Outcome.FAILED
    if f.landed is Landed.NO:
        return Outcome.FAILED  # something else is there: a one-line conflict
    if f.landed is Landed.PENDING:  # not visible: a repeat is safe (a late original makes it a 409, looked at)
        return Outcome.RETRY if f.answer.retryable and f.can_retry else Outcome.UNKNOWN
    return Outcome.UNKNOWN  # may have landed: said so, never guessed


def landed_state(*, create: bool, exists: bool, uuid_matches: bool, found: int, expected: int,
                 requirements_hold: bool) -> Landed:
    """One table's landed state from its current metadata: `create` (the commit assigns the table
    UUID), `exists`, `uuid_matches` (a create: the table has our UUID), `found` of our `expected`
    snapshot ids, and whether every requirement of our commit still holds."""
    if not create and expected == 0:
        return Landed.UNKNOWN  # nothing unique to look for
    if not exists:
        return Landed.PENDING if create else Landed.NO  # a dropped table: our commit asserts its UUID
    if create and not uuid_matches:
        return Landed.NO  # someone else's table by that name: our assert-create can never pass
    if found == expected:
        return Landed.YES
    if found > 0:
        return Landed.UNKNOWN  # partly there: expired since? never guess
    return Landed.PENDING if requirements_hold else Landed.NO


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The shared decision table (rows, landed rows, field meanings)."""
    loaded: dict[str, Any] = json.loads(TABLE_PATH.read_text())
    return loaded


_LANDED_TEXT = {"yes": "ours found", "no": "ours absent, can never land", "pending": "ours absent, may land",
                "unknown": "unreadable / nothing to recognise", "not-checked": "—"}


def markdown_table() -> str:
    """The decision rows as the Markdown table docs/commits.md shows (checked by a unit test)."""
    rows = []
    for r in table()["rows"]:
        answer = f"HTTP {r['answer']}" if isinstance(r["answer"], int) else r["answer"]
        outcome = r["outcome"]
        if outcome == "retry":
            outcome = "retry, same key" if r["key"] == "sent" else "retry"
        elif outcome == "unknown":
            outcome = "unknown, files kept"
        landed = _LANDED_TEXT[r["landed"]] if r["reconcile"] else "—"
        lifetime = r["lifetime"] if r.get("covered", True) else f"{r['lifetime']} (operation not de-duplicated)"
        rows.append([r["commit"], "yes" if r["earlier"] else "no", f"{r['key_mode']}, {lifetime}", answer,
                     "yes" if r["can_retry"] else "no", landed, f"**{outcome}**", r["why"],
                     "—" if r["reference"] == "docs/commits.md" else r["reference"]])
    return markdown.table(["commit", "earlier attempt may have reached", "key mode, lifetime", "answer",
                           "another attempt allowed", "table loaded", "outcome", "why", "ref"], rows)


if __name__ == "__main__":  # python -m pyspark_catalog_ext.commit.decision: the table for docs/commits.md
    print(markdown_table(), end="")
