"""The lakehouse that outlives the command that started it (`pyspark-catalog-ext local up` / `down`):
its state file, with the random keys, readable by this user only."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict

from pyspark_catalog_ext.cache import write_private
from pyspark_catalog_ext.catalog.local_lakehouse import LakehouseInfo, read_state, running_info, state_file
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.lakehouse.server import MIN_CREDENTIAL_SECONDS, Lakehouse
from pyspark_catalog_ext.processes import alive, kill_group


def up(data_dir: str | None = None, credential_seconds: int = MIN_CREDENTIAL_SECONDS, iceberg_port: int | None = None, s3_port: int | None = None,
       delegation: str = "vended-credentials") -> LakehouseInfo:
    """Start a detached lakehouse (or return the one already running). `delegation="remote-signing"`
    also starts the remote signer (its own process) in front of the catalog."""
    existing = running_info()
    if existing is not None:
        if existing.delegation != delegation:
            raise ConfigError(f"a lakehouse with delegation {existing.delegation} is already running; stop it first (pyspark-catalog-ext local down)")
        return existing
    lake = Lakehouse(data_dir=data_dir, credential_seconds=credential_seconds, iceberg_port=iceberg_port, s3_port=s3_port, detached=True,
                     delegation=delegation)
    lake.start()
    assert lake.info is not None
    # the keys are random per instance, so the state file keeps them: readable by this user only
    state = asdict(lake.info) | {"root": str(lake.root), "temporary": data_dir is None, "started_at": time.time()}
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    write_private(tmp, json.dumps(state, indent=2))
    os.replace(tmp, path)
    return lake.info


def down() -> bool:
    """Stop the `local up` lakehouse; False if none was running."""
    state = read_state()
    state_file().unlink(missing_ok=True)
    if state is None:
        return False
    signer_pid = int((state.get("ports") or {}).get("signer_pid") or 0)
    if signer_pid and alive(signer_pid):
        kill_group(signer_pid)  # it would also exit by itself once weed is gone
    kill_group(int(state["pid"]))
    if state.get("root"):
        shutil.rmtree(state["root"], ignore_errors=True)
    return True
