"""PyIceberg's two FileIOs, with each ADLS account's and GCS prefix's vended token handed to its own filesystem.

A `RefreshingFileIO` delegate holds one key set. ADLS: the filesystem of
`abfs[s]://container@<host>/...` (and `wasb[s]`) gets that host's SAS only and the endpoint
`adls.connection-string.<host>` names, where PyIceberg 0.12 would use one SAS for every account.
GCS with fsspec: gcsfs gets google-auth `Credentials` holding the vended token, without an expiry
of their own (the delegate is replaced on renewal), and a 401 is `GcsTokenRefused` at once instead
of gcsfs's retries with the same token. Everything else is PyIceberg's own (the overridden methods
are its private ones of 0.12).

Why: docs/stores.md, section 'PyIceberg 0.12: PyArrow and fsspec'.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pyiceberg.io import GCS_TOKEN, FileIO
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.io.pyarrow import PyArrowFileIO

from pyspark_catalog_ext.catalog.storage_keys import ADLS_CONNECTION, ADLS_SAS
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.storage.accounts import ADLS_SCHEMES, adls_account, gcs_filesystem

__all__ = ["StoreFsspecFileIO", "StorePyArrowFileIO", "store_aware"]

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
                    raise ConfigError(f"{ADLS_CONNECTION}{account.host} must be the account's blob endpoint URL, "
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


def store_aware(io_class: type[FileIO]) -> type[FileIO]:
    """The class to build a table's delegates with: ours in place of PyIceberg's two own FileIOs
    (exactly those: a user's own FileIO class is used as it is)."""
    if io_class is PyArrowFileIO:
        return StorePyArrowFileIO
    if io_class is FsspecFileIO:
        return StoreFsspecFileIO
    return io_class
