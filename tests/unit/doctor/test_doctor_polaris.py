"""The doctor against the Polaris 1.4.1 emulator (checked against a real server's recorded answers),
in front of the real SeaweedFS, with no --s3-endpoint: Polaris names the S3 endpoint only in the
table answer's config, its credential cache hands the same keys back on a second load or re-stage,
and it serves GET .../credentials without listing it. Spark, PyIceberg and the inventory are left
out here (tests/slow/test_emulated_catalogs.py runs the doctor's full matrix row)."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.catalog.profiles import get_profile
from pyspark_catalog_ext.doctor.runner import run_doctor
from tests.emulators import Emulator, connection
from tests.emulators.behaviour import POLARIS_1_4
from tests.servers import S3ExpiryProxy
from tests.user_path import DOCTOR_FAST


@pytest.fixture(scope="module")
def report(lakehouse):
    s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    try:
        with Emulator(POLARIS_1_4, lakehouse, s3, 900.0) as emu:
            yield run_doctor(POLARIS_1_4.profile, skip=DOCTOR_FAST[1:], **connection(POLARIS_1_4, emu))
    finally:
        s3.stop()


def _probe(report, probe_id: str):
    return next(r for r in report.results if r.id == probe_id)


def test_every_required_probe_passes_without_an_s3_endpoint(report):
    assert report.exit_code == 0 and report.cleanup_ok, [(r.id, r.status, r.summary) for r in report.required_failures]
    run = set(get_profile("polaris").required_probes) - set(report.skipped_by_user)  # Spark and PyIceberg: left out here
    assert run and run <= {r.id for r in report.results if r.status == "pass"}
    scope = _probe(report, "credential-scope")
    assert scope.status == "pass" and scope.evidence["s3_endpoint_from"] == "table config", scope.summary
    # the doctor's cleanup of its staged tables reached S3 with the same settings
    staged = [c for c in report.cleanup if c["action"].startswith("finish staged table")]
    assert staged and all(c["ok"] and "could not list" not in str(c["note"]) for c in staged), staged


def test_the_credential_cache_is_reported_as_what_it_is(report):
    vended, restage = _probe(report, "vended-credentials"), _probe(report, "re-stage")
    assert vended.status == "pass" and vended.evidence["cached"] is True
    assert "the catalog caches vended keys" in vended.summary and "same keys on every load" not in vended.summary
    assert restage.status == "pass" and restage.evidence["cached"] is True and restage.evidence["fresh_keys"] is False
    assert "the catalog caches vended keys" in restage.summary


def test_an_unlisted_credentials_endpoint_that_answers_is_said_to_work(report):
    probe = _probe(report, "credentials-endpoint")
    assert probe.status == "pass" and probe.evidence["advertised"] is False
    assert probe.summary.endswith("served although /v1/config does not list it"), probe.summary


def test_polaris_1_7_with_idempotency_on_is_partial_and_exits_0(lakehouse):
    """One lifetime advertised for the whole catalog, but only table creates and plain commits replayed
    (as a real 1.7.0 did): the probe says which, and the exit code does not depend on the others."""
    from tests.emulators.behaviour import POLARIS_1_7_IDEMPOTENT as b

    s3 = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    try:
        with Emulator(b, lakehouse, s3, 900.0) as emu:
            report = run_doctor(b.profile, skip=["vended,scope,refresh,staging,signing,stores,pyiceberg,spark,inventory"],
                                **connection(b, emu))
    finally:
        s3.stop()
    probe = _probe(report, "idempotency-replay")
    assert probe.status == "pass", probe.summary
    assert probe.evidence["operations"] == {"commit": "replayed", "create": "replayed",
                                            "staged-create commit": "refused (409)", "namespace create": "refused (409)"}
    assert probe.summary.startswith("partial: replayed for commit, create;"), probe.summary
    assert report.exit_code == 0 and report.cleanup_ok, report.cleanup
