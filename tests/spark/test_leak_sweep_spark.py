"""The leak sweep, Spark: the same keys, channels and attackers as tests/unit/test_leak_sweep.py,
against Spark catalogs on the shim (what `pce.configure` sets up), each run a catalog of its own
registered at run time in the session's one SparkSession, reading the sweep's table and appending a
row. In both storage modes: vended credentials, and remote signing (S3FileIO's signer client, which
carries the catalog's token).

Where Iceberg's own clients still send credentials to a server-given origin (the JVM transport that
binds them to the trust set is being built beside this), the case is a strict xfail: it turns into a
failure the day it stops leaking, so the mark is removed then."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import pytest

from pyspark_catalog_ext.spark.conf import SPARK_CATALOG
from tests.leak_sweep import CaseReport, Sweep, catalog_props, modes, sweep_table  # noqa: F401 - fixtures
from tests.servers.injector import CHANNELS

REPORTS: list[CaseReport] = []
_NAMES = itertools.count()
MODES = ("vended", "signing")
CASES = [(mode, channel) for mode in MODES for channel in CHANNELS]
# Leaking today, each through Iceberg's own HTTP clients in the JVM, which the shim's transport is to bind
# to the trust set: strict, so each turns into a failure the day it stops leaking.
_CONFIG_PROXY = ("a /v1/config rest.client.proxy.hostname/port routes the catalog's own calls (its bearer token, "
                 "header.* values) through a server-chosen proxy: Iceberg builds its HTTP client from the merged config")
LEAKING: dict[tuple[str, str], str] = {
    ("vended", "config-defaults"): _CONFIG_PROXY,
    ("vended", "config-overrides"): _CONFIG_PROXY,
    ("signing", "config-defaults"): _CONFIG_PROXY,
    ("signing", "config-overrides"): _CONFIG_PROXY,
    ("signing", "table-config"): ("a table config's oauth2-server-uri gets the client secret from Iceberg's signer client, "
                                  "and an absolute s3.signer.endpoint the catalog's token"),
}


def spark_scenario(spark, lakehouse, sweep: Sweep, table: tuple[str, str]) -> Callable[[], None]:
    props = {**catalog_props(lakehouse, sweep, shim=True), "cache-enabled": "false"}

    def scenario() -> None:
        name = f"sweep{next(_NAMES)}"
        spark.conf.set(f"spark.sql.catalog.{name}", SPARK_CATALOG)
        for key, value in props.items():
            spark.conf.set(f"spark.sql.catalog.{name}.{key}", value)
        target = f"{name}.{table[0]}.{table[1]}"
        spark.sql(f"SELECT count(*) FROM {target}").collect()
        spark.sql(f"INSERT INTO {target} VALUES (5)")
    return scenario


def _case(mode: str, channel: str):
    reason = LEAKING.get((mode, channel))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(mode, channel, id=f"spark-{mode}-{channel}", marks=marks)


@pytest.mark.parametrize(("mode", "channel"), [_case(m, c) for m, c in CASES])
def test_no_credential_reaches_a_server_given_origin(mode, channel, spark, lakehouse, modes, sweep_table) -> None:  # noqa: F811
    started = time.monotonic()
    report = modes[mode].run_case("spark", mode, channel, spark_scenario(spark, lakehouse, modes[mode], sweep_table))
    REPORTS.append(report)
    print(report.summary(), f"(wall {time.monotonic() - started:.1f}s)")
    print(report.details())
    assert not report.leaked, report.failure()
