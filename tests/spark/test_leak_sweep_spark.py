"""The leak sweep, Spark: the same keys, channels and attackers as tests/unit/leak_sweep/test_leak_sweep.py,
against Spark catalogs on the shim (what `pce.configure` sets up), each run a catalog of its own
registered at run time in the session's one SparkSession, reading the sweep's table and appending a
row. In both storage modes: vended credentials, and remote signing (S3FileIO's signer client, which
carries the catalog's token)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import pytest

from pyspark_catalog_ext.spark.conf import SPARK_CATALOG
from tests.helpers import untrack_tables
from tests.leak_sweep import Sweep, catalog_props, modes, sweep_table  # noqa: F401 - fixtures
from tests.servers.injector import CHANNELS

_NAMES = itertools.count()
MODES = ("vended", "signing")
CASES = [(mode, channel) for mode in MODES for channel in CHANNELS]


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


@pytest.fixture(scope="module", autouse=True)
def _registry_without_earlier_tests(spark) -> None:
    """Earlier tests' tables leave the driver registry first: a renewal of one at a port a sweep
    attacker now holds would be a hit no sweep run caused."""
    assert not untrack_tables(spark)


@pytest.mark.parametrize(("mode", "channel"), [pytest.param(m, c, id=f"spark-{m}-{c}") for m, c in CASES])
def test_no_credential_reaches_a_server_given_origin(mode, channel, spark, lakehouse, modes, sweep_table) -> None:  # noqa: F811
    started = time.monotonic()
    report = modes[mode].run_case("spark", mode, channel, spark_scenario(spark, lakehouse, modes[mode], sweep_table))
    print(report.summary(), f"(wall {time.monotonic() - started:.1f}s)")
    print(report.details())
    assert not report.leaked, report.failure()
