"""resources/event-schemas.json: well formed, naming exactly the events each runtime's code emits,
shipped in the shim jar, rendered into docs/events.md; its check finds every kind of mismatch; the
test hook sees every event. (tests/conftest.py holds every event of every test to it.)"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pyspark_catalog_ext import event_schemas, events
from tests.helpers import ROOT

REJECTED = {"table": "lake.db.t", "catalog": "lake", "error_code": "ExpiredToken", "key_age_ms": 1200,
            "stated_lifetime_ms": None, "reactive_refresh": True}


def test_the_schema_is_well_formed() -> None:
    spec = event_schemas.schemas()
    types = [e["type"] for e in spec["events"]]
    assert len(types) == len(set(types))
    for e in spec["events"]:
        assert e["meaning"] and set(e["runtimes"]) <= {"jvm", "python"} and e["runtimes"], e["type"]
        assert not set(e["fields"]) & set(spec["envelope"]), f"{e['type']} declares an envelope field"
        for name, field in e["fields"].items():
            assert field["type"] in spec["types"] and isinstance(field["required"], bool), (e["type"], name)
            assert isinstance(field["nullable"], bool) and set(field.get("runtimes", [])) <= set(e["runtimes"]), (e["type"], name)


def _emitted_types() -> dict[str, set[str]]:
    """{event type: runtimes whose main code emits it}, read from the call sites."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "pyspark_catalog_ext").rglob("*.py"):
        for t in re.findall(r'events\.emit\(\s*"([^"]+)"', path.read_text()):
            found.setdefault(t, set()).add("python")
    for path in (ROOT / "jvm-shim" / "src" / "main" / "java").rglob("*.java"):
        text = path.read_text()
        for t in re.findall(r'EventLog\.emit\(\s*"([^"]+)"', text):
            found.setdefault(t, set()).add("jvm")
        if "EventLog.emit(kind + " in text:  # CommitEvents: "<kind>.started/.finished" for its kinds
            kinds = text[text.index(" String kind("):text.index("return null;", text.index(" String kind("))]
            for kind in re.findall(r'return "(\w+)";', kinds):
                for phase in ("started", "finished"):
                    found.setdefault(f"{kind}.{phase}", set()).add("jvm")
    return found


def test_the_schema_names_exactly_the_events_the_code_emits() -> None:
    emitted = _emitted_types()
    assert "commit.finished" in emitted and "credential_refresh.started" in emitted  # the scan works
    assert {t: sorted(r) for t, r in emitted.items()} == {e["type"]: sorted(e["runtimes"]) for e in event_schemas.schemas()["events"]}


@pytest.mark.parametrize("fields, runtime, problem", [
    (REJECTED, "python", None),
    (REJECTED, "jvm", None),
    ({k: v for k, v in REJECTED.items() if k != "stated_lifetime_ms"}, "python", "missing required field 'stated_lifetime_ms'"),
    ({**REJECTED, "reactive_refresh_started": True}, "python", "unexpected field 'reactive_refresh_started'"),
    ({**REJECTED, "key_age_ms": "1200"}, "jvm", "field 'key_age_ms' is str '1200', not integer"),
    ({**REJECTED, "key_age_ms": True}, "jvm", "not integer"),
    ({**REJECTED, "table": None}, "python", "field 'table' is null"),
    ({**REJECTED, "source": "s3"}, "python", "field 'source' is the envelope's"),  # it would hide the runtime
])
def test_violations_find_each_kind_of_mismatch(fields: dict[str, Any], runtime: str, problem: str | None) -> None:
    found = event_schemas.violations("credentials.rejected", fields, runtime)
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0]), found


def test_violations_of_type_runtime_values_and_items() -> None:
    assert "unknown event type" in event_schemas.violations("credentials.refused", {}, "python")[0]
    assert "emitted by python" in event_schemas.violations("credential_refresh.started", {"table": "t", "staged": False}, "python")[0]
    done = {"table": "t", "staged": False, "outcome": "renewed", "duration_s": 0.1}
    assert "not one of" in event_schemas.violations("credential_refresh.finished", done, "jvm")[0]
    keys = {"catalog": "lake", "answer": "/v1/config", "keys": ["a", 1]}
    assert "holds an item that is not string" in event_schemas.violations("answer.keys-dropped", keys, "python")[0]
    # A field of the other runtime's view is unexpected: the staging helpers do not send catalog_session.
    started = {"table": "lake.db.t", "mode": "create", "catalog_session": "abc"}
    assert "unexpected field 'catalog_session'" in event_schemas.violations("stage_create.started", started, "python")[0]


def test_the_hook_sees_emitted_and_delivered_events_with_their_runtime_and_nulls() -> None:
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def record(e: events.Event, runtime: str) -> None:
        if e.type.startswith("test."):  # a refresh still running from an earlier test publishes too
            seen.append((e.type, runtime, dict(e.fields)))

    events.set_check(record)
    try:
        events.emit("test.hooked", a=1, b=None, c=events.NULL)
        events.deliver(events.Event("test.from-jvm", {"source": "jvm", "stated_lifetime_ms": None}))
    finally:
        events.set_check(None)
    assert seen == [("test.hooked", "python", {"a": 1, "c": None}),
                    ("test.from-jvm", "jvm", {"source": "jvm", "stated_lifetime_ms": None})]  # the JVM's null kept


def test_docs_show_exactly_the_schema() -> None:
    doc = ROOT.joinpath("docs", "events.md").read_text()
    start, end = "<!-- event-schemas.json: start -->\n", "<!-- event-schemas.json: end -->"
    assert start in doc and end in doc, "docs/events.md lost the markers around its event table"
    assert doc[doc.index(start) + len(start):doc.index(end)] == event_schemas.markdown_table(), (
        "docs/events.md's event table is not resources/event-schemas.json's: replace the lines between its markers "
        "with the output of `python -m pyspark_catalog_ext.event_schemas`")


def test_the_shim_jar_carries_the_same_schema() -> None:
    from pyspark_catalog_ext.spark.jvm_deps import shim_build

    with zipfile.ZipFile(shim_build.shim_jar()) as jar:
        assert jar.read("io/catalogext/shim/event-schemas.json") == event_schemas.SCHEMAS_PATH.read_bytes()


def test_a_subprocess_jvms_mismatches_reach_the_test_through_the_violations_file(pytestconfig) -> None:
    """Every Spark JVM the suite starts, in a subprocess too, names the file it appends mismatches to
    (EventSchemasTest shows the JVM's side); the autouse check reads the complete lines back once."""
    import os

    # The suite's own conftest as pytest loaded it (registered under its path): sys.modules["conftest"]
    # is whichever folder's conftest.py was collected last.
    conftest = pytestconfig.pluginmanager.get_plugin(str(ROOT / "tests" / "conftest.py"))
    assert conftest is not None, "pytest did not load tests/conftest.py"
    path = conftest._JVM_VIOLATIONS
    defaults = Path(os.environ["SPARK_CONF_DIR"], "spark-defaults.conf").read_text()
    for role in ("driver", "executor"):
        line = next(x for x in defaults.splitlines() if x.startswith(f"spark.{role}.defaultJavaOptions "))
        assert f"-Dcatalogext.events.violations-file={path}" in line.split() and "-Dcatalogext.events.check-schema=true" in line
    with path.open("a") as f:
        f.write("test.a: unknown event type\ntest.b: half")
    assert conftest._subprocess_jvm_violations() == ["test.a: unknown event type"]
    with path.open("a") as f:
        f.write(" written\n")
    assert conftest._subprocess_jvm_violations() == ["test.b: half written"]
    assert conftest._subprocess_jvm_violations() == []
