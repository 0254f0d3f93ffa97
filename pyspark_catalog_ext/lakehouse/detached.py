"""The lakehouse that outlives the command that started it (`pyspark-catalog-ext local up` / `down`):
its state file, with the random keys, readable by this user only."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from pyspark_catalog_ext.cache import cache_dir, write_private
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.lakehouse.server import MIN_CREDENTIAL_SECONDS, Lakehouse, LakehouseInfo
from pyspark_catalog_ext.processes import alive, kill_group


def state_file() -> Path:
    return cache_dir() / "local" / "state.json"


def read_state() -> dict | None:
    """The state of a `local up` lakehouse if its process is still alive, else None."""
    path = state_file()
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    pid = int(state.get("pid", 0))
    try:  # guard against pid reuse: it must still be our weed with our data dir
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        cmdline = ""
    if not (alive(pid) and "weed" in cmdline and state.get("data_dir", "\0") in cmdline):
        return None
    return state


def running_info() -> LakehouseInfo | None:
    """LakehouseInfo of the `local up` lakehouse, if one is running."""
    state = read_state()
    if state is None:
        return None
    fields = {k: state[k] for k in LakehouseInfo.__dataclass_fields__ if k in state}
    if "secret_key" not in fields:
        return None  # a state file of an older version: its lakehouse cannot be reached without its keys
    return LakehouseInfo(**fields)


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
