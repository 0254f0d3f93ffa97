"""RefreshPolicy, the Python face of the JVM scheduler's `catalog-ext.refresh.*` properties.

For Spark, when to renew, backoff and timeouts are decided in the JVM and tested there on a fake clock
(jvm-shim/src/test/.../RefreshPolicyTest, RegistryLivenessTest, run by test_java_units.py).
"""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.refresh import RefreshPolicy


def test_policy_is_written_as_the_properties_the_jvm_reads():
    props = RefreshPolicy(check_interval_s=1.5, min_ahead_s=0, lifetime_fraction=0.4, initial_backoff_s=0.25,
                          max_backoff_s=8, timeout_s=2, assumed_lifetime_s=600).catalog_properties()
    assert props == {
        "catalog-ext.refresh.check-interval-ms": "1500",
        "catalog-ext.refresh.min-ahead-ms": "0",
        "catalog-ext.refresh.lifetime-fraction": "0.4",
        "catalog-ext.refresh.initial-backoff-ms": "250",
        "catalog-ext.refresh.max-backoff-ms": "8000",
        "catalog-ext.refresh.timeout-ms": "2000",
        "catalog-ext.refresh.assumed-lifetime-ms": "600000",
        "catalog-ext.refresh.reactive-max-per-minute": "6",  # a count, not milliseconds
        "catalog-ext.refresh.max-clock-skew-ms": "5000",
    }


def test_defaults_follow_delta_sharing_driver_cache():
    props = RefreshPolicy().catalog_properties()
    assert props["catalog-ext.refresh.check-interval-ms"] == "60000"
    assert props["catalog-ext.refresh.min-ahead-ms"] == "300000"
    assert props["catalog-ext.refresh.lifetime-fraction"] == "0.2"


@pytest.mark.parametrize("bad", [{"lifetime_fraction": 1.5}, {"check_interval_s": 0}, {"timeout_s": 0},
                                 {"initial_backoff_s": 10, "max_backoff_s": 5}])
def test_bad_policy_is_rejected(bad):
    with pytest.raises(ValueError):
        RefreshPolicy(**bad)
