"""Azurite's blob service on loopback, with storage accounts of random keys, and SAS minting.

Iceberg names an ADLS location ``abfs[s]://<container>@<account>.dfs.core.windows.net/<path>`` and
keys its settings by that host (``adls.sas-token.<host>``, ``adls.connection-string.<host>``). The
"connection string" ADLSFileIO reads is the client's endpoint: here Azurite's path-style URL
``http://127.0.0.1:<port>/<account>``, so several accounts share one Azurite.

What Azurite 3.35.0 checks and what it cannot do (checked; docs/stores.md):
- a SAS token's signature (HMAC of the account key) and its ``st``/``se`` times: a request with an
  expired or not-yet-valid SAS, a bad signature, or another account's SAS is answered
  ``403 AuthorizationFailure`` (Azure answers an expired SAS ``403 AuthenticationFailed``);
- container and blob SAS (``sr=c``, ``b``, ``bs``); a directory SAS (``sr=d``) is refused, so no
  token narrower than a container can be minted;
- the blob endpoint only: no DFS endpoint, no hierarchical namespace.
It is started with ``--skipApiVersionCheck``: the Azure SDKs send service versions newer than the
ones it knows.
"""
from __future__ import annotations

import base64
import datetime as dt
import os
import secrets
import time
from dataclasses import dataclass

import requests

from pyspark_catalog_ext.ports import free_port
from tests.servers.child import ChildServer
from tests.stores import install

DFS_SUFFIX = ".dfs.core.windows.net"
DEFAULT_ACCOUNTS = ("pcestore1", "pcestore2")


@dataclass(frozen=True)
class AdlsLocation:
    """``abfs[s]://container@host/path`` taken apart (host = ``<account>.dfs.core.windows.net``)."""

    container: str
    host: str
    path: str

    @property
    def account(self) -> str:
        return self.host.split(".", 1)[0]

    @staticmethod
    def parse(location: str) -> AdlsLocation:
        scheme, sep, rest = location.partition("://")
        if not sep or scheme not in ("abfs", "abfss") or "@" not in rest.split("/", 1)[0]:
            raise ValueError(f"not an abfs[s]://container@host/path location: {location!r}")
        authority, _, path = rest.partition("/")
        container, _, host = authority.partition("@")
        return AdlsLocation(container, host, path)


class Azurite(ChildServer):
    """Azurite's blob service; `accounts` get random 64-byte keys, passed through the environment."""

    def __init__(self, accounts: tuple[str, ...] = DEFAULT_ACCOUNTS):
        super().__init__("azurite")
        self.keys = {name: base64.b64encode(secrets.token_bytes(64)).decode() for name in accounts}
        self.secrets = list(self.keys.values())
        self.port = 0

    # ---- lifecycle
    def start(self) -> Azurite:
        main = install.azurite_blob_main()
        self.port = free_port()
        data = self.root / "data"
        data.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("AZURITE_")}
        env["AZURITE_ACCOUNTS"] = ";".join(f"{name}:{key}" for name, key in self.keys.items())
        cmd = [install.node(), str(main), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
               "--location", str(data), "--disableTelemetry", "--skipApiVersionCheck", "--silent"]
        # Any answer from the service counts (an anonymous list is refused with 403 once it listens).
        self.spawn(cmd, env, lambda: requests.get(self.endpoint(next(iter(self.keys))), timeout=2).status_code > 0)
        return self

    def __enter__(self) -> Azurite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- addressing
    def host(self, account: str) -> str:
        return account + DFS_SUFFIX

    def endpoint(self, account: str) -> str:
        """The blob endpoint of `account` (what ``adls.connection-string.<host>`` names)."""
        return f"http://127.0.0.1:{self.port}/{account}"

    def location(self, container: str, path: str = "", account: str | None = None) -> str:
        account = account or next(iter(self.keys))
        return f"abfs://{container}@{self.host(account)}/{path}".rstrip("/")

    def connection_string(self, account: str) -> str:
        """A full connection string with the account key (Azure SDK clients; never vended)."""
        return (f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={self.keys[account]};"
                f"BlobEndpoint={self.endpoint(account)};")

    def service(self, account: str):
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string(account))

    def create_container(self, container: str, account: str | None = None) -> None:
        from azure.core.exceptions import ResourceExistsError

        try:
            self.service(account or next(iter(self.keys))).create_container(container)
        except ResourceExistsError:
            pass

    # ---- SAS
    def container_sas(self, account: str, container: str, lifetime_s: float,
                      permission: str = "racwdl") -> tuple[str, int]:
        """A container SAS (``sr=c``) valid for `lifetime_s` seconds: (token, expiry in epoch ms)."""
        from azure.storage.blob import ContainerSasPermissions, generate_container_sas

        expires = _expiry(lifetime_s)
        token = generate_container_sas(account, container, account_key=self.keys[account],
                                       permission=ContainerSasPermissions.from_string(permission),
                                       expiry=expires)
        return token, int(expires.timestamp() * 1000)

    def account_sas(self, account: str, lifetime_s: float) -> str:
        """An account SAS over every container (the catalog server's own, long-lived)."""
        from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

        return generate_account_sas(account, self.keys[account],
                                    resource_types=ResourceTypes(service=True, container=True, object=True),
                                    permission=AccountSasPermissions.from_string("racwdlup"),
                                    expiry=_expiry(lifetime_s))


def _expiry(lifetime_s: float) -> dt.datetime:
    # SAS times have whole seconds: round down, so a token never lives longer than asked.
    return dt.datetime.fromtimestamp(int(time.time() + lifetime_s), dt.timezone.utc)
