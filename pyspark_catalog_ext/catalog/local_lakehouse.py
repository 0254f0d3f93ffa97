"""How to reach the embedded lakehouse: `LakehouseInfo` (its endpoints, keys and catalog client)
and the state file a detached one (`pyspark-catalog-ext local up`) leaves in the cache dir. Only
reading here, so that configuring a session never imports the server: lakehouse/ starts, records
and stops it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.cache import cache_dir
from pyspark_catalog_ext.catalog.connection import CatalogConnection
from pyspark_catalog_ext.processes import alive

__all__ = ["CLIENT_ID", "LakehouseInfo", "read_state", "running_info", "state_file"]

CLIENT_ID = "lakeclient"  # the OAuth2 client of the lakehouse's catalog front (lakehouse/tokens.py)


@dataclass(frozen=True)
class LakehouseInfo:
    """How to reach a running lakehouse. The secret key is masked in repr."""

    iceberg_uri: str
    s3_endpoint: str
    warehouse: str
    access_key: str
    secret_key: str = field(repr=False)
    region: str
    data_dir: str
    log_file: str
    pid: int
    ports: dict = field(default_factory=dict)
    delegation: str = "vended-credentials"  # or "remote-signing": iceberg_uri is then the signer proxy
    client_secret: str = field(default="", repr=False)  # the catalog front's OAuth2 client secret

    @property
    def credential(self) -> str:
        """OAuth2 client credentials `id:secret` for the catalog: the catalog front's client (tokens.py),
        which no SeaweedFS port accepts, in both delegation modes (the S3 admin keys stay in the
        lakehouse's process)."""
        return f"{CLIENT_ID}:{self.client_secret}"

    @property
    def oauth2_server_uri(self) -> str:
        return f"{self.iceberg_uri}/v1/oauth/tokens"

    def connection(self, **overrides: Any) -> CatalogConnection:
        """The catalog connection of this lakehouse (profile `local`): its URI, warehouse,
        delegation and OAuth2 client; `overrides` are `CatalogConnection.resolve` arguments."""
        args: dict[str, Any] = {"uri": self.iceberg_uri, "warehouse": self.warehouse, "delegation": self.delegation,
                                **{k: v for k, v in overrides.items() if v is not None}}
        if not (args.get("credential") or args.get("token")):
            args["credential"] = self.credential
        return CatalogConnection.resolve("local", **args)

    def public_dict(self) -> dict:
        """Everything except the secrets (for printing)."""
        data = asdict(self)
        data.pop("secret_key")
        data.pop("client_secret")
        return data


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
