"""PyIceberg's refresh engine (CredentialRefresher, its scheduler and StrategyChain) replays every row
of the shared timelines (resources/refresh-scenarios.json) on a fake clock; the shim's
RefreshScenariosTest replays the same rows with TableEntry and CatalogRefresher. docs/refresh.md
must show exactly these rows."""

from __future__ import annotations

import datetime as dt
import json
import zipfile
from typing import Any

import pytest

from pyspark_catalog_ext import events
from pyspark_catalog_ext.errors import CredentialRefreshError, CredentialsRejectedError
from pyspark_catalog_ext.refresh import scenarios
from pyspark_catalog_ext.refresh.entry import TableEntry
from pyspark_catalog_ext.refresh.policy import RefreshPolicy
from pyspark_catalog_ext.refresh.refresher import CredentialRefresher
from pyspark_catalog_ext.refresh.rejection import Rejection
from pyspark_catalog_ext.refresh.sources import FunctionSource, StorageCredentials, TableInfo
from pyspark_catalog_ext.refresh.strategies import StrategyChain
from tests.helpers import ROOT

SPEC = scenarios.scenarios()
T0 = 1_000_000.0  # the first keys' fetch, in seconds (whole: instants stay exact in binary)
LOCATION = "s3://bucket/db/t"
EVENT_TYPES = ("credentials.rejected", "credentials.lifetime-learned")


class Clock:
    def __init__(self) -> None:
        self.local = T0

    def __call__(self) -> float:
        return self.local

    def sleep(self, seconds: float) -> None:
        self.local += max(0.0, seconds)


class Catalog:
    """The catalog's answers, in order (the row's `catalog`), as a user credential source."""

    def __init__(self, row: dict[str, Any], clock: Clock, skew_s: float) -> None:
        self.answers = list(row.get("catalog", []))
        self.lifetime_ms = row["keys-lifetime-ms"]
        self.clock, self.skew_s = clock, skew_s
        self.requests = 0
        self.last: StorageCredentials | None = None

    def keys(self, lifetime_ms: int | None) -> StorageCredentials:
        n = self.requests + 1
        # The catalog states expiries on its own clock.
        expires = None if lifetime_ms is None else dt.datetime.fromtimestamp(
            self.clock.local + self.skew_s + lifetime_ms / 1000, tz=dt.timezone.utc)
        self.last = StorageCredentials(f"K{n}", f"secret-{n}", f"token-{n}", expires)
        return self.last

    def fetch(self, table: TableInfo) -> StorageCredentials:
        self.requests += 1
        answer = self.answers.pop(0) if self.answers else {"answer": "new", "lifetime-ms": self.lifetime_ms}
        if answer["answer"] == "fail":
            raise CredentialRefreshError("the catalog answered 503")
        if answer["answer"] == "same":
            assert self.last is not None
            return self.last
        return self.keys(answer["lifetime-ms"])


def policy_of(row: dict[str, Any]) -> RefreshPolicy:
    knobs = {k: v for k, v in {**SPEC["policy"], **row.get("policy", {})}.items() if k != "meaning"}
    return RefreshPolicy.from_properties({f"catalog-ext.refresh.{k}": str(v) for k, v in knobs.items()})


def error_kind(exc: Exception) -> str:
    if isinstance(exc, CredentialsRejectedError):
        return "cannot-help"
    if "reactive-max-per-minute" in str(exc):
        return "rate-limit"
    return "failed"


class Replay:
    """One timeline driven through PyIceberg's real engine: a reader does what RefreshingFileIO does."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.clock = Clock()
        skew_s = row.get("catalog-skew-ms", 0) / 1000
        self.catalog = Catalog(row, self.clock, skew_s)
        source = FunctionSource(self.catalog.fetch, "scenario")
        self.refresher = CredentialRefresher("lake", client=None, policy=policy_of(row), source=source,  # type: ignore[arg-type]
                                             clock=self.clock, sleep=self.clock.sleep, background=False,
                                             skews=lambda: {"catalog": skew_s})
        first = self.catalog.keys(row["keys-lifetime-ms"])
        self.entry: TableEntry = self.refresher.track(("db", "t"), first.to_config(), [], location=LOCATION,
                                                            staged=False)
        self.signed: dict[str, int] = {}

    def read(self, name: str, accepted: bool) -> None:
        generation, _, wait_at = self.entry.slot_for(LOCATION)
        if self.refresher.ensure_fresh(self.entry, generation, wait_at):
            generation, _, _ = self.entry.slot_for(LOCATION)
        self.signed[name] = generation
        if accepted:
            self.entry.accepted(generation)

    def reject(self, name: str) -> None:
        generation = self.signed[name]
        rejection = Rejection("ExpiredToken", 403)
        if self.refresher.dead_on_arrival(self.entry, generation):  # as RefreshingFileIO._recover
            raise self.refresher.rejected_again(self.entry, rejection)
        self.refresher.rejected(self.entry, generation, rejection)

    def step(self, step: dict[str, Any]) -> None:
        name = step.get("keys", "k")
        if step["do"] == "tick":
            self.refresher.scheduler.tick()
        elif step["do"] in ("read", "sign"):
            self.read(name, accepted=step["do"] == "read")
        elif step["do"] == "reject":
            self.reject(name)
        else:
            raise AssertionError(f"unknown step {step['do']}")


ROWS = SPEC["timelines"]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_every_timeline(row: dict[str, Any]) -> None:
    seen: list[events.Event] = []
    sink = events.subscribe(lambda e: seen.append(e) if e.type in EVENT_TYPES else None)
    try:
        replay = Replay(row)
        for i, step in enumerate(row["steps"]):
            replay.clock.local = T0 + step["at"] / 1000
            errors = []
            for _ in range(step.get("times", 1)):
                try:
                    replay.step(step)
                except (CredentialRefreshError, CredentialsRejectedError) as exc:
                    errors.append(error_kind(exc))
            assert errors == ([step["error"]] * step.get("times", 1) if "error" in step else []), f"step {i}: {step}"
            if "requests" in step:
                assert replay.catalog.requests == step["requests"], f"step {i}: {step}"
    finally:
        events.unsubscribe(sink)
    expect = row["expect"]
    assert replay.catalog.requests == expect["requests"]
    learned = replay.refresher.learned_lifetime_s
    assert (None if learned is None else round(learned * 1000)) == expect.get("learned-lifetime-ms")
    got = [{"type": e.type, **{k: v for k, v in e.fields.items() if k not in ("table", "catalog")}} for e in seen]
    assert got == expect.get("events", [])


PLANS = SPEC["plans"]


@pytest.mark.parametrize("row", PLANS, ids=[r["id"] for r in PLANS])
def test_every_plan(row: dict[str, Any]) -> None:
    now = [0.0]
    chain = StrategyChain(timer=lambda: now[0])
    state = row["state"]
    for name in row.get("missing", []):
        chain.mark_missing(name)
    now[0] += row.get("after-ms", 0) / 1000
    req = {"catalog": "lake", "namespace": ["db"], "table": "t", "location": LOCATION, "staged": state["staged"],
           "stage_create_request": {"name": "t"} if state.get("stage-request") else None,
           "refresh_endpoint": "v1/refresh/t" if state["refresh-endpoint"] else None,
           "storage_refresh_tokens": {LOCATION: "token"} if state["refresh-token"] else {}}
    plan = [s.name for s in chain.plan(req)]
    assert plan == row["plan"]
    assert (plan[0] if plan else "none") == row["label"]


def test_the_rows_are_many_unique_and_cover_every_group() -> None:
    ids = [r["id"] for r in ROWS + PLANS]
    assert len(ids) == len(set(ids)) and len(ids) >= 50
    assert {r["group"] for r in ROWS} >= {"schedule", "hard-margin", "single-flight", "backoff", "same-keys",
                                         "learned-lifetime", "reactive-rate-limit", "cannot-help", "clock-skew"}
    assert any(p["state"]["staged"] for p in PLANS) and all(r["why"] for r in ROWS + PLANS)


def test_the_expected_events_have_the_fields_the_schema_names() -> None:
    """Every event a row expects has exactly the fields event-schemas.json gives its type (the event
    credential-rules.json's `rejected-event` names; table and catalog are checked by neither replay:
    they name the row)."""
    from pyspark_catalog_ext import event_schemas
    from pyspark_catalog_ext.refresh.rules import spec

    assert spec()["rejected-event"]["event"] == "credentials.rejected"
    for type_ in EVENT_TYPES:
        fields = set(event_schemas.by_type()[type_]["fields"]) - {"table", "catalog"}
        expected = [e for r in ROWS for e in r["expect"].get("events", []) if e["type"] == type_]
        assert expected and all(set(e) - {"type"} == fields for e in expected), type_
        named = {"table": "lake.db.t", "catalog": "lake"} if type_ == "credentials.rejected" else {"catalog": "lake"}
        assert all(not event_schemas.violations(type_, {**named, **{k: v for k, v in e.items() if k != "type"}}, "python")
                   for e in expected), type_
    rejected = [e for r in ROWS for e in r["expect"].get("events", []) if e["type"] == "credentials.rejected"]
    assert any(e["stated_lifetime_ms"] is None for e in rejected)  # present, null


def test_docs_show_exactly_the_scenarios() -> None:
    doc = ROOT.joinpath("docs", "refresh.md").read_text()
    start, end = "<!-- refresh-scenarios.json: start -->\n", "<!-- refresh-scenarios.json: end -->"
    assert start in doc and end in doc, "docs/refresh.md lost the markers around its scenario tables"
    assert doc[doc.index(start) + len(start):doc.index(end)] == scenarios.markdown_table(), (
        "docs/refresh.md's scenario tables are not resources/refresh-scenarios.json's: replace the lines between its "
        "markers with the output of `python -m pyspark_catalog_ext.refresh.scenarios`")


def test_the_shim_jar_carries_the_same_scenarios() -> None:
    from pyspark_catalog_ext.spark.jvm_deps import shim_build

    with zipfile.ZipFile(shim_build.shim_jar()) as jar:
        assert jar.read("io/catalogext/shim/refresh-scenarios.json") == scenarios.SCENARIOS_PATH.read_bytes()
    json.loads(scenarios.SCENARIOS_PATH.read_text())
