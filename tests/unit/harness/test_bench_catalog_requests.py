"""The catalog-requests benchmark still parses its arguments and picks its families (no Spark: the run
itself takes minutes per family and stays out of CI)."""
from __future__ import annotations

import sys

import pytest

from tests.emulators.behaviour import FAMILIES, NONE
from tests.helpers import ROOT

BENCH = ROOT / "benchmarks" / "bench_catalog_requests.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH.parent))  # the benchmark imports its sibling _common
    try:
        import bench_catalog_requests

        yield bench_catalog_requests
    finally:
        sys.path.remove(str(BENCH.parent))


def run(bench, monkeypatch, capsys, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["bench_catalog_requests.py", *args])
    with pytest.raises(SystemExit) as exited:
        bench.main()
    return int(exited.value.code or 0), capsys.readouterr().err


def test_bad_arguments_get_one_line_saying_what_to_pass(bench, monkeypatch, capsys):
    code, err = run(bench, monkeypatch, capsys, "--family", "polaris,oracle")
    assert code == 2 and "oracle is not an emulated catalog" in err and "polaris-1.7.0" in err
    code, err = run(bench, monkeypatch, capsys, "--lifetime", "200")
    assert code == 2 and "--lifetime must be over 300 s" in err


def test_families_by_name_release_or_all(bench):
    assert [b.id for b in bench.select_families("polaris,gravitino-1.3.0")] == ["polaris-1.4.1", "polaris-1.7.0",
                                                                                 "polaris-main", "gravitino-1.3.0"]
    assert bench.select_families("all") == list(FAMILIES)
    with pytest.raises(ValueError, match="nothing is not an emulated catalog"):
        bench.select_families(" , ")


def test_iceberg_provider_runs_exactly_where_the_catalog_advertises_a_refresh_endpoint(bench):
    runs = {b.id for b in FAMILIES if bench.iceberg_provider_gap(b) is None}
    assert runs == {b.id for b in FAMILIES if b.refresh_endpoint != NONE and b.vends != NONE}
    assert runs >= {"polaris-1.7.0", "polaris-main", "lakekeeper-0.13.4", "unity-0.6.0+pr1886", "gravitino-1.3.0"}
    why = {b.id: bench.iceberg_provider_gap(b) for b in FAMILIES}
    assert "not advertised" in why["nessie-0.108"] and "vends no keys" in why["glue-2026"]
    assert "without expiry" in why["unity-0.6.0"] and "no refresh endpoint" in why["r2-2026"]


def test_iceberg_clients_renew_three_minutes_before_expiry_on_average(bench):
    # The SDK jitters the prefetch (5 min before expiry) uniformly up to 1 min before stale (expiry).
    assert bench.iceberg_period(360) == 180 and bench.iceberg_period(310) == 130


def test_iceberg_release_is_checked_up_front_and_1_11_on_schedules_its_own_refresh(bench, monkeypatch, capsys):
    code, err = run(bench, monkeypatch, capsys, "--iceberg", "9.9")
    assert code == 2 and "--iceberg: Iceberg 9.9 has no runtime" in err and "1.12.0" in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1
    assert [bench.scheduled_refresh(v) for v in ("1.10.2", "1.11.0", "1.12.0")] == [False, True, True]
