"""Step 10 of the user path on every emulated catalog family (tests/emulators): `doctor` with the
client probes. DuckDB and Trino read the table the Spark probe's CTAS wrote through the shim and
write tables of their own that Spark and PyIceberg read back; where an engine cannot work on the
family (its auth, a read-only catalog) the doctor says why. What each engine did is recorded as the
family's Clients cells in the support matrix (resources/matrix/emulated/<family>-<release>.json).

Keys live 15 minutes here: neither engine renews vended keys within a query, and this step is about
what they can do on the catalog, not about expiry (steps 2-6 are).

Each family costs a doctor run with Spark, DuckDB and a Trino server (about a minute on 2 cores), so
`./dev test` runs one family of each kind: OAuth2 with vended keys, a bearer token, SigV4 and a
read-only catalog. PCE_EMULATED_CLIENTS=all runs every family (how the recordings were made).
"""
from __future__ import annotations

import json
import os

import pytest

from pyspark_catalog_ext.doctor.matrix import capabilities
from tests.conftest import run_cli
from tests.emulators import FAMILIES, Behaviour, Emulator, cli_args, connection
from tests.emulators.recording import check_matrix
from tests.servers import S3ExpiryProxy
from tests.user_path import CLIENT_PROBES_ONLY

LIFETIME = 900.0
ENGINES = ("duckdb", "trino")


@pytest.fixture(scope="module")
def s3_proxy(lakehouse):
    proxy = S3ExpiryProxy(lakehouse.info.s3_endpoint, exempt=(lakehouse.info.access_key,)).start()
    proxy.max_age_seconds = LIFETIME
    yield proxy
    proxy.stop()


def expected(b: Behaviour) -> dict[str, tuple[str, str]]:
    """Per engine, the doctor's status and a phrase of its summary, from what the family offers."""
    if b.auth == "sigv4":  # known from the connection, whatever the Spark probe did
        return {engine: ("unsupported", "not sigv4 auth") for engine in ENGINES}
    if b.read_only:  # the catalog refuses the Spark probe's writes: there is nothing to read
        return {engine: ("unsupported", "needs spark-ctas, which the catalog does not support") for engine in ENGINES}
    return {engine: ("pass", "read Spark's") for engine in ENGINES}


# One family of each kind (OAuth2 + vended keys, bearer token, SigV4, read-only).
EACH_KIND = ("polaris-1.7.0", "r2-2026", "glue-2026", "unity-0.6.0")
ALL_FAMILIES = os.environ.get("PCE_EMULATED_CLIENTS") == "all"


def families() -> list:
    skip = pytest.mark.skip(reason="one family of each kind runs by default; PCE_EMULATED_CLIENTS=all runs this one")
    return [pytest.param(b, id=b.id, marks=[] if ALL_FAMILIES or b.id in EACH_KIND else [skip]) for b in FAMILIES]


@pytest.mark.parametrize("b", families())
def test_10_client_probes(b, lakehouse, s3_proxy, request):
    with Emulator(b, lakehouse, s3_proxy, LIFETIME) as emu:
        args = cli_args(b, emu)
        if "s3_endpoint" not in connection(b, emu):
            # Trino's native S3 takes vended keys but not a vended endpoint: the user names the store
            args += ["--s3-endpoint", emu.s3_endpoint]
        env = None
        if b.auth == "sigv4":  # the family's jobs use their own AWS keys (default provider chain)
            env = {"AWS_ACCESS_KEY_ID": lakehouse.info.access_key, "AWS_SECRET_ACCESS_KEY": lakehouse.info.secret_key,
                   "AWS_REGION": "us-east-1"}
        proc = run_cli("doctor", "--json", *args, *CLIENT_PROBES_ONLY, env=env, timeout=900)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    assert lakehouse.info.secret_key not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    probes = {p["id"]: p for p in report["probes"]}
    got = {engine: (probes[engine]["status"], probes[engine]["summary"]) for engine in ENGINES}
    print(json.dumps({pid: (p["status"], p["summary"]) for pid, p in probes.items()}, indent=1))
    for engine, (status, says) in expected(b).items():
        assert got[engine][0] == status and says in got[engine][1], (engine, got)
        assert "***" not in got[engine][1], got[engine]  # no secret to mask in it, and no prose masked as one
    if not (b.stage_create or b.read_only):  # a CTAS that cannot be atomic is refused up front: not a failure
        ctas = probes["spark-ctas"]
        assert ctas["status"] == "unsupported" and "cannot be atomic" in ctas["summary"], ctas["summary"]
    caps = capabilities(report)
    check_matrix(request, b, "clients", {"capabilities": {engine: caps[engine] for engine in ENGINES if engine in caps}})
