"""The leak sweep, Python clients: every URL-valued property key Iceberg 1.10.2, 1.11.0, 1.12.0 and
PyIceberg read (found in their code: `tests.url_keys`), injected through `/v1/config` defaults and
overrides, a table's config, a table's properties, and a redirect (302 to a GET, 307 to a POST) on
each kind of catalog request, each pointing at a loopback attacker of its own, while PyIceberg
(PyArrow and fsspec FileIO, through `GuardedRestCatalog`), the CLI (`staged cleanup`) and the doctor
do their usual work against the embedded lakehouse. No attacker may receive a credential
(`tests.leak_sweep` says what counts).

Two storage modes: vended credentials (the session lakehouse), and remote signing (its signer, in
process, in front of the same SeaweedFS). The Spark cases are in tests/spark/test_leak_sweep_spark.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.leak_stores import STORE_MODES
from tests.leak_sweep import HEADER, HEADER_VALUE, Sweep, catalog_props, modes, sweep_table  # noqa: F401 - fixtures
from tests.servers.injector import CHANNELS
from tests.url_keys import url_keys


# --------------------------------------------------------------------------- clients
def pyiceberg_scenario(lakehouse, sweep: Sweep, table: tuple[str, str], io: str) -> Callable[[], None]:
    import pyarrow as pa

    from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog

    props = catalog_props(lakehouse, sweep)

    def scenario() -> None:
        catalog = pyiceberg_catalog(props, **{"py-io-impl": io})
        try:
            loaded = catalog.load_table(table)
            steps = [lambda: loaded.scan().to_arrow(), lambda: loaded.append(pa.table({"x": pa.array([4], pa.int64())}))]
            if sweep.store is None:
                for step in steps:
                    step()
                return
            # The stand-in store has no file (404): each step still sends its requests, and the
            # first failure is the run's outcome.
            errors = []
            for step in steps:
                try:
                    step()
                except Exception as exc:  # noqa: BLE001 - each step's failure is recorded, the next one runs
                    errors.append(exc)
            if errors:
                raise errors[0]
        finally:
            catalog.close()
    return scenario


def cli_scenario(sweep: Sweep, home: Path, *args: str) -> Callable[[], str]:
    """`pyspark-catalog-ext ARGS --from-pyiceberg sweep`: the connection (secrets, the custom
    header) comes from a .pyiceberg.yaml, as a user's would."""
    conn = sweep.connection
    lines = ["catalog:", "  sweep:", f"    uri: {json.dumps(conn['uri'])}", f"    warehouse: {json.dumps(conn['warehouse'])}",
             f"    credential: {json.dumps(conn['credential'])}", "    header:", f"      {HEADER}: {json.dumps(HEADER_VALUE)}"]
    home.mkdir(parents=True, exist_ok=True)
    (home / ".pyiceberg.yaml").write_text("\n".join(lines) + "\n")

    def scenario() -> str:
        proc = run_cli(*args, "--from-pyiceberg", "sweep", env={"PYICEBERG_HOME": str(home)}, timeout=600)
        output = proc.stdout + proc.stderr
        if "Traceback" in proc.stderr or (proc.returncode != 0 and args[0] != "doctor"):
            raise RuntimeError(f"exit {proc.returncode}: {output[-1500:]}")
        return output
    return scenario


STORES = tuple(f"{store}-{mode}" for store, store_modes in STORE_MODES.items() for mode in store_modes)
CLIENTS: dict[str, tuple[str, ...]] = {  # client -> the modes it runs in
    "pyiceberg-pyarrow": ("vended", "signing", *STORES),
    # gcsfs with a token of the user's or ADC's (PyIceberg's own path) checks it at Google's tokeninfo
    # and looks buckets up over gRPC, neither reachable here: minutes of retries per run.
    "pyiceberg-fsspec": ("vended", "signing", *(m for m in STORES if m not in ("gcs-own", "gcs-ambient"))),
    "cli": ("vended",),  # staged cleanup reads S3 with keys
    "doctor": ("vended", "signing"),
}
CASES = [pytest.param(client, mode, channel, id=f"{client}-{mode}-{channel}")
         for client, client_modes in CLIENTS.items() for mode in client_modes for channel in CHANNELS]


@pytest.mark.parametrize(("client", "mode", "channel"), CASES)
def test_no_credential_reaches_a_server_given_origin(client, mode, channel, lakehouse, modes, sweep_table, tmp_path,
                                                     monkeypatch) -> None:
    sweep = modes[mode]
    assert sweep.ambient is not None
    for name, value in sweep.ambient.env.items():  # the machine's identities, for this test only
        monkeypatch.setenv(name, value)
    if client.startswith("pyiceberg"):
        io = "pyiceberg.io.pyarrow.PyArrowFileIO" if client.endswith("pyarrow") else "pyiceberg.io.fsspec.FsspecFileIO"
        scenario: Callable[[], Any] = pyiceberg_scenario(lakehouse, sweep, sweep_table, io)
    elif client == "cli":
        scenario = cli_scenario(sweep, tmp_path, "staged", "cleanup", "--table", ".".join(sweep_table), "--min-age", "86400")
    else:
        extra = ("--delegation", "remote-signing") if mode == "signing" else ()
        scenario = cli_scenario(sweep, tmp_path, "doctor", "--json", "--skip", "spark", *extra)
    started = time.monotonic()
    # The CLI and the doctor pass answers through the same allow-list the PyIceberg cases sweep with
    # every key PyIceberg reads; they run the keys named as URLs only (each CLI case is a subprocess
    # per batch: the full set made the sweep several minutes longer on CI's 2 cores).
    only = url_keys(pyiceberg_reads=False) if client in ("cli", "doctor") else None
    report = sweep.run_case(client, mode, channel, scenario, only=only)
    print(report.summary(), f"(wall {time.monotonic() - started:.1f}s)")
    print(report.details())
    assert not report.leaked, report.failure()
    if sweep.store is not None:
        # The oracle saw the credential each store request carried, or it would be blind to any.
        assert any(run.store_saw for run in report.runs), f"the store got no credential it could see:\n{report.details()}"
