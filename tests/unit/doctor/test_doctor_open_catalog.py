"""The doctor on a catalog that enforces no auth (Iceberg's REST fixture, Nessie with auth off): by
default the auth probe fails (a security finding) and every probe after it is skipped; declared
with `open_catalog=True` (`doctor --open-catalog`) it warns "open (declared)" and the probes after
it run. A loopback catalog answers anyone, as those servers do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pyspark_catalog_ext.doctor.runner import run_doctor
from tests.conftest import run_cli
from tests.servers.scripted_catalog import R, Scripted

ONLY_BASICS = ["vended,scope,refresh,staging,idempotency,signing,pyiceberg,spark,inventory"]


@pytest.fixture
def open_catalog() -> Iterator[Scripted]:
    srv = Scripted()
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": []}))  # to anyone: no auth enforced
    yield srv
    srv.close()


def _statuses(srv: Scripted, **kwargs) -> dict[str, tuple[str, str]]:
    report = run_doctor("unity", uri=srv.uri, warehouse="wh", token="tok-open-0001", skip=ONLY_BASICS, **kwargs)
    return {r.id: (r.status, r.summary) for r in report.results}


def test_an_undeclared_open_catalog_fails_the_auth_probe(open_catalog: Scripted) -> None:
    got = _statuses(open_catalog)
    assert got["auth"][0] == "fail" and "answers unauthenticated requests" in got["auth"][1], got["auth"]
    assert "--open-catalog" in got["auth"][1]
    assert got["namespaces"] == ("skipped", "needs auth (fail)"), got["namespaces"]


def test_a_declared_open_catalog_warns_and_the_probes_after_auth_run(open_catalog: Scripted) -> None:
    got = _statuses(open_catalog, open_catalog=True)
    assert got["auth"][0] == "pass" and got["auth"][1].startswith("open (declared)") and "warning" in got["auth"][1]
    assert got["namespaces"][0] != "skipped", got["namespaces"]
    assert open_catalog.requests("POST", "/v1/wh/namespaces")  # the namespaces probe reached the catalog


def test_the_cli_declares_it_with_open_catalog(open_catalog: Scripted) -> None:
    proc = run_cli("doctor", "--json", "--profile", "unity", "--uri", open_catalog.uri, "--warehouse", "wh",
                   "--token", "tok-open-0001", "--skip", ONLY_BASICS[0], "--open-catalog", timeout=120)
    assert '"open (declared)' in proc.stdout and "tok-open-0001" not in proc.stdout + proc.stderr, proc.stderr[-800:]
    assert "warning: the catalog enforces no auth (declared with --open-catalog)" in proc.stderr


def test_an_interrupted_run_says_cleanup_done_only_when_it_was() -> None:
    """After Ctrl-C the doctor printed "cleanup FAILED: ..." and then "cleanup done"."""
    from pyspark_catalog_ext.catalog.profiles import get_profile
    from pyspark_catalog_ext.cli.doctor import interrupted_line
    from pyspark_catalog_ext.doctor.report import summary_lines
    from pyspark_catalog_ext.doctor.runner import DoctorReport

    report = DoctorReport(get_profile("local"), "http://127.0.0.1:1", None, "none", "doctor_x", (), interrupted="SIGINT",
                          cleanup=[{"action": "drop namespace doctor_x", "ok": False, "note": "HTTP 503"}])
    lines = summary_lines(report)
    assert any(line.startswith("cleanup FAILED: drop namespace doctor_x") for line in lines)
    assert "cleanup done" not in interrupted_line(report) and "cleanup incomplete" in interrupted_line(report)
    report.cleanup = [{"action": "drop namespace doctor_x", "ok": True, "note": "dropped"}]
    assert interrupted_line(report) == "error: interrupted (SIGINT); cleanup done"
