"""The leak sweep, Spark on ADLS and GCS tables, with the machine's identities in the JVM's environment.

The keys, attackers and oracle of tests/unit/leak_sweep/test_leak_sweep.py in the store modes of
tests/leak_stores.py (the catalog's SAS or token, the user's own key or token, Google ADC), against a
Spark catalog on the shim per run, reading the sweep's table and appending a row. A JVM reads its
environment once, at start, so the session runs in a process of its own (tests/jobs/sweep_job.py)
started with AWS's, Azure's and Google's default chains set. The channels are those through which a
catalog names storage: a redirect or a table's properties do not depend on the table's store, and
tests/spark/test_leak_sweep_spark.py sweeps them for Spark.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.leak_stores import ADLS_ACCOUNT, STORE_MODES
from tests.leak_sweep import catalog_props, modes, sweep_table  # noqa: F401 - fixtures
from tests.sweep_job_client import SweepJob
from tests.url_keys import ADLS_HOST

ICEBERG = "1.11.0"  # the stack the store tests run the shim's refresh on (tests/slow/test_stores.py)
MODES = tuple(f"{store}-{mode}" for store, store_modes in STORE_MODES.items() for mode in store_modes)
# Where the user's own credentials or the machine's are at stake, every channel that names storage; where
# the catalog vends, a table's config (what vends for a table; its /v1/config runs cost CI minutes and
# add no Java path the S3 modes in tests/spark/test_leak_sweep_spark.py do not take).
CHANNELS = ("config-defaults", "config-overrides", "table-config")
CASES = [(mode, channel) for mode in MODES for channel in CHANNELS if not mode.endswith("-vended") or channel == "table-config"]


def spark_catalog_props(lakehouse, sweep, **extra: str) -> dict[str, str]:
    """A run's Spark catalog: the sweep's properties, plus the user's own ADLS key and endpoint under the
    names Iceberg Java reads (tests/leak_stores.py writes PyIceberg's). Without them Java would take
    Azure's default credential from the environment, and look for the account on the internet, never
    reaching the stand-in."""
    props = {**catalog_props(lakehouse, sweep, shim=True), "cache-enabled": "false", **extra}
    user = sweep.user_properties
    if sweep.store is not None and "adls.account-key" in user:
        props.update({"adls.auth.shared-key.account.name": user["adls.account-name"],
                      "adls.auth.shared-key.account.key": user["adls.account-key"],
                      f"adls.connection-string.{ADLS_HOST}": f"{sweep.store.url}/{ADLS_ACCOUNT}"})
    return props


@pytest.fixture(scope="module")
def job(lakehouse, modes, tmp_path_factory):  # noqa: F811
    info = lakehouse.info
    ambient = modes[MODES[0]].ambient
    env = {**os.environ, **ambient.env}
    session = {"uri": info.iceberg_uri, "warehouse": info.warehouse, "credential": info.credential,
               "iceberg": ICEBERG, "stores": "s3,adls,gcs"}
    started = SweepJob(env, session, tmp_path_factory.mktemp("sweep-job") / "job.log")
    yield started
    started.close()


@pytest.mark.parametrize(("mode", "channel"), [pytest.param(m, c, id=f"spark-{m}-{c}") for m, c in CASES])
def test_no_credential_reaches_a_server_given_origin(mode, channel, job, lakehouse, modes, sweep_table) -> None:  # noqa: F811
    sweep = modes[mode]
    props = spark_catalog_props(lakehouse, sweep)
    started = time.monotonic()
    report = sweep.run_case("spark", mode, channel, lambda: job.run(props, sweep_table))
    print(report.summary(), f"(wall {time.monotonic() - started:.1f}s)")
    print(report.details())
    assert not report.leaked, report.failure()
    # The oracle saw the credential each store request carried, or it would be blind to any.
    assert any(run.store_saw for run in report.runs), f"the store got no credential it could see:\n{report.details()}"


def test_control_an_origin_the_user_trusts_gets_their_own_token(job, lakehouse, modes, sweep_table) -> None:  # noqa: F811
    """The control: with the attacker's origin trusted by the user, a table config's `gcs.service.host`
    does take the user's own GCS token there, and the oracle says so: the sweep sees such a leak."""
    sweep, key = modes["gcs-own"], "gcs.service.host"
    props = spark_catalog_props(lakehouse, sweep, **{"catalog-ext.trusted-origins": sweep.values([key])[key]})
    report = sweep.run_case("spark", "gcs-own", "table-config", lambda: job.run(props, sweep_table), only=[key])
    print(report.details())
    assert key in report.leaked, report.details()
