"""PyIceberg's two FileIOs, with each ADLS account's and GCS prefix's vended token handed to its own filesystem.

A `RefreshingFileIO` delegate holds one key set: the keys of the storage prefix a file falls under.
PyIceberg 0.12 cannot use a vended ADLS or GCS token on every path as it is:
- ADLS: a catalog vends `adls.sas-token.<host>` per storage account. PyArrowFileIO reads only
  `adls.sas-token` and `adls.account-name` (one account per FileIO, whatever the file's account);
  FsspecFileIO takes the first `adls.sas-token.<host>` it finds for every account. Here the
  filesystem of `abfs[s]://container@<host>/...` (and `wasb[s]`) gets that host's SAS only, and the
  endpoint `adls.connection-string.<host>` names (what Iceberg's ADLSFileIO reads), so a file of
  another account never gets this one's token.
- GCS with fsspec: gcsfs takes a string token as a file name or a raw token it would try to refresh;
  here it gets google-auth `Credentials` holding the vended token, without an expiry of their own
  (`RefreshingFileIO` replaces the delegate with the renewed token; gcsfs must not try to refresh it),
  and a 401 is raised at once as `GcsTokenRefused` instead of being retried by gcsfs with the same token.
  PyArrowFileIO's GCS filesystem already takes `gcs.oauth2.token` and its expiry as they are.
Everything else is PyIceberg's own behaviour (the overridden methods are its private ones of 0.12).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pyiceberg.io import FileIO
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.io.pyarrow import PyArrowFileIO

from pyspark_catalog_ext.errors import ConfigError, GcsTokenRefused
from pyspark_catalog_ext.refresh.vended import ADLS_SAS, GCS_TOKEN

__all__ = ["AdlsAccount", "StoreFsspecFileIO", "StorePyArrowFileIO", "adls_account", "gcs_filesystem", "store_aware"]

ADLS_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
_CONNECTION = "adls.connection-string."  # + <host>: the account's blob endpoint (Iceberg's name)


class AdlsAccount:
    """One storage account as a file's location names it: its SAS and its blob endpoint."""

    def __init__(self, host: str, account: str, sas_token: str, endpoint: str) -> None:
        self.host, self.account, self.sas_token, self.endpoint = host, account, sas_token, endpoint

    def __repr__(self) -> str:  # never the token
        return f"AdlsAccount({self.host!r}, endpoint={self.endpoint!r})"


def adls_account(properties: dict[str, Any], netloc: str | None) -> AdlsAccount | None:
    """The vended SAS and endpoint for the account of `netloc` (`container@<host>`), None when the
    properties vend no SAS for that account (PyIceberg's own settings then apply)."""
    host = (netloc or "").rpartition("@")[2].lower()
    if not host:
        return None
    account = host.split(".", 1)[0]
    candidates = [host] + sorted(k[len(ADLS_SAS):] for k in properties
                                 if k.startswith(ADLS_SAS) and k[len(ADLS_SAS):].split(".", 1)[0] == account)
    for candidate in candidates:  # the exact host first, then another endpoint of the same account (wasb: blob.)
        sas = properties.get(ADLS_SAS + candidate)
        if sas:
            endpoint = str(properties.get(_CONNECTION + candidate) or properties.get(_CONNECTION + host)
                           or f"https://{account}.blob.core.windows.net")
            return AdlsAccount(candidate, account, str(sas), endpoint)
    return None


class StorePyArrowFileIO(PyArrowFileIO):
    """PyArrowFileIO whose Azure filesystem is built per account from that account's vended SAS."""

    @staticmethod
    def parse_location(location: str, properties: Any = None) -> tuple[str, str, str]:
        """PyIceberg's, but an `abfs[s]://container@<host>/path` location (and `wasb[s]`) gives Arrow's
        path `container/path`: PyIceberg 0.12 returns `container@<host>/path`, and Arrow takes that
        whole first segment as the container name, which no container can have
        (apache/iceberg-python#2698). The netloc (with the account) still picks the filesystem."""
        scheme, netloc, path = PyArrowFileIO.parse_location(location, properties or {})
        if scheme in ADLS_SCHEMES and "@" in netloc:
            path = netloc.partition("@")[0] + path[len(netloc):]
        return scheme, netloc, path

    def _initialize_fs(self, scheme: str, netloc: str | None = None) -> Any:
        if scheme in ADLS_SCHEMES:
            account = adls_account(dict(self.properties), netloc)
            if account is not None:
                from pyarrow.fs import AzureFileSystem

                endpoint = urlsplit(account.endpoint)
                if not endpoint.scheme or not endpoint.netloc:
                    raise ConfigError(f"{_CONNECTION}{account.host} must be the account's blob endpoint URL, "
                                      f"as http[s]://host[:port][/account]; got {account.endpoint!r}")
                # Arrow addresses an emulator's account by path (http://127.0.0.1:port/<account>) itself,
                # and appends `sas_token` to the account URL as it is: without its "?" the SAS would
                # become the container name (a vended SAS, like the Azure SDKs' own, has none).
                sas = account.sas_token if account.sas_token.startswith("?") else "?" + account.sas_token
                return AzureFileSystem(account_name=account.account, sas_token=sas,
                                       blob_storage_authority=endpoint.netloc, blob_storage_scheme=endpoint.scheme,
                                       dfs_storage_authority=endpoint.netloc, dfs_storage_scheme=endpoint.scheme)
        return super()._initialize_fs(scheme, netloc)


class StoreFsspecFileIO(FsspecFileIO):
    """FsspecFileIO whose adlfs filesystem takes the file's own account's SAS and whose gcsfs filesystem
    takes the vended GCS token as it is."""

    def _get_fs(self, scheme: str, hostname: str | None = None) -> Any:
        if scheme in ADLS_SCHEMES:
            account = adls_account(dict(self.properties), hostname)
            if account is not None:
                from adlfs import AzureBlobFileSystem

                # skip_instance_cache: each key set is its own filesystem, dropped with its delegate.
                return AzureBlobFileSystem(
                    account_name=account.account, skip_instance_cache=True,
                    connection_string=f"BlobEndpoint={account.endpoint};SharedAccessSignature={account.sas_token}")
            # No SAS vended for this account: PyIceberg's own settings, without another account's SAS
            # (PyIceberg would take the first `adls.sas-token.<host>` for any account).
            from pyiceberg.io.fsspec import _adls

            return _adls({k: v for k, v in self.properties.items() if not k.startswith(ADLS_SAS)}, hostname)
        if scheme in ("gs", "gcs") and self.properties.get(GCS_TOKEN):
            return gcs_filesystem(dict(self.properties))
        return super()._get_fs(scheme, hostname)


def gcs_filesystem(properties: dict[str, Any]) -> Any:
    """A gcsfs filesystem holding the vended token of `properties` (`gcs.oauth2.token`) as it is."""
    from gcsfs.core import GCSFileSystem  # the JSON API only (not gcsfs 2026.10's gRPC bucket-layout lookup)

    token = _vended_gcs_token(str(properties[GCS_TOKEN]))
    return GCSFileSystem(project=properties.get("gcs.project-id"), token=token,
                         endpoint_url=properties.get("gcs.service.host"),
                         session_kwargs={"trace_configs": [_on_401(token)]},
                         consistency="none", skip_instance_cache=True)


def _vended_gcs_token(token: str) -> Any:
    """The vended token as google-auth credentials without an expiry of their own (gcsfs then never asks
    to refresh them), whose refresh, asked for once GCS refused them (`_on_401`), raises
    `GcsTokenRefused`: the refusal reaches the reactive path at once, where gcsfs would otherwise send
    the same token again 5 times over ~30 s."""
    from google.oauth2.credentials import Credentials

    class VendedGcsToken(Credentials):
        def refresh(self, request: Any) -> None:
            raise GcsTokenRefused("GCS refused the vended token (401): it is no longer valid")

    return VendedGcsToken(token)


def _on_401(credentials: Any) -> Any:
    """An aiohttp trace that invalidates `credentials` when GCS answers 401 (gcsfs's retry then asks to refresh them)."""
    import aiohttp

    async def on_request_end(session: Any, context: Any, params: Any) -> None:
        if params.response.status == 401:
            credentials.token = None

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(on_request_end)
    return trace


def store_aware(io_class: type[FileIO]) -> type[FileIO]:
    """The class to build a table's delegates with: ours in place of PyIceberg's two own FileIOs
    (exactly those: a user's own FileIO class is used as it is)."""
    if io_class is PyArrowFileIO:
        return StorePyArrowFileIO
    if io_class is FsspecFileIO:
        return StoreFsspecFileIO
    return io_class
