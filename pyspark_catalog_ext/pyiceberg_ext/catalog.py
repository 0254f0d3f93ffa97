"""`GuardedRestCatalog`: PyIceberg's RestCatalog with refreshing or signing table FileIOs and guarded commits.

Built on `catalog.rest.CatalogClient`; its seams into PyIceberg are all on the subclass (no
patching): `_create_session` keeps the raw JSON of each table answer (PyIceberg's models drop
`storage-refresh-token` and `remote-signing-config`); `_response_to_table` /
`_response_to_staged_table` build the table's FileIO from the catalog's properties and the table's
config only, never its metadata properties (a `RefreshingFileIO`, or a signing FileIO);
`commit_table` goes through `commits.GuardedCommit`. Select it from `.pyiceberg.yaml` with
`py-catalog-impl: pyspark_catalog_ext.pyiceberg_ext.GuardedRestCatalog`.

Why: docs/pyiceberg.md, section 'PyIceberg jobs' ("Seams into PyIceberg").
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, TypeVar

from pydantic import Field, ValidationError
from pyiceberg.catalog.rest import Endpoints, TableResponse
from pyiceberg.catalog.rest.auth import AUTH_MANAGER
from pyiceberg.catalog.rest.scan_planning import StorageCredential
from pyiceberg.io import S3_SIGNER, FileIO, load_file_io
from pyiceberg.io.fsspec import FsspecFileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import CommitTableRequest, CommitTableResponse, Table
from pyiceberg.table.update import AssertCreate
from pyiceberg.typedef import IcebergBaseModel, Identifier
from pyiceberg.utils.properties import get_header_properties, property_as_bool
from requests import Response, Session

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.catalog.rest import CatalogClient, PurgeRequiredError
from pyspark_catalog_ext.catalog.server_settings import table_io_properties
from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.pyiceberg_ext.commits import GuardedCommit
from pyspark_catalog_ext.pyiceberg_ext.fileio import RefreshingFileIO, write_bounds
from pyspark_catalog_ext.pyiceberg_ext.s3signing import SigningFsspecFileIO, SigningPyArrowFileIO
from pyspark_catalog_ext.pyiceberg_ext.storefs import store_aware
from pyspark_catalog_ext.refresh.policy import PROPERTY_PREFIX, RefreshPolicy, refresh_policy
from pyspark_catalog_ext.refresh.refresher import CredentialRefresher
from pyspark_catalog_ext.refresh.sources import CredentialSource
from pyspark_catalog_ext.refresh.vended import has_credentials
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.storage.signing import SignerSession, remote_signing_requested, signer_target

log = logging.getLogger("pyspark_catalog_ext.pyiceberg")

__all__ = ["GuardedRestCatalog", "PurgeRequiredError"]

# Table answers worth observing: create/stage-create (POST .../tables) and load (GET .../tables/{t});
# not commits (POST .../tables/{t}), whose answers carry no credentials.
_TABLE_ANSWER = re.compile(r"/v1/(?:[^/]+/)?namespaces/[^/]+/tables(?:/[^/?]+)?(?:\?.*)?$")
REFRESH_PROPERTY = PROPERTY_PREFIX + "enabled"


class GuardedRestCatalog(CatalogClient):
    """A RestCatalog whose tables keep their vended credentials fresh and whose commits are guarded.

    Args:
        name, properties: as for `RestCatalog` (so a user's PyIceberg config works unchanged).
        refresh: renew vended credentials (default True; also `catalog-ext.refresh.enabled=false`).
        policy: when to renew; default: Spark's `catalog-ext.refresh.*` properties of this catalog,
            else PYSPARK_CATALOG_EXT_REFRESH_* variables, else `RefreshPolicy()`.
        source: a `CredentialSource` that serves this catalog's tables instead of the catalog.
    """

    def __init__(self, name: str, *, refresh: bool | None = None, policy: RefreshPolicy | None = None,
                 source: CredentialSource | None = None, **properties: Any) -> None:
        self._observed = threading.local()
        self.refresher: CredentialRefresher | None = None
        self._signers: SignerSession | None = None
        self._signers_lock = threading.Lock()
        super().__init__(name, **properties)
        write_bounds(self.properties)  # a bad catalog-ext.pyiceberg.* value fails here, in one line
        if refresh is None:
            refresh = property_as_bool(self.properties, REFRESH_PROPERTY, True)
        if refresh:
            self.refresher = CredentialRefresher(name, self, policy or refresh_policy(self.properties),
                                                source=source, skews=lambda: {"catalog": self.clock_skew_s})

    # -- observing answers ---------------------------------------------------------------------
    def _create_session(self) -> Session:
        session = super()._create_session()
        session.hooks["response"].append(self._observe)
        return session

    def _observe(self, resp: Response, *args: Any, **kwargs: Any) -> None:
        if resp.status_code != 200 or resp.request is None:
            return
        path = resp.request.path_url
        if _TABLE_ANSWER.search(path) and (resp.request.method == "GET" or path.split("?")[0].endswith("/tables")):
            answer = _parse(_VendedTableAnswer, resp.content)
            if answer is not None:
                request_body = _json_bytes(resp.request.body) if resp.request.method == "POST" else None
                self._observed.last = (answer, request_body)

    def _take_observed(self, table_response: TableResponse) -> tuple[_VendedTableAnswer, dict | None]:
        answer, request_body = getattr(self._observed, "last", (None, None))
        self._observed.last = (None, None)
        if answer is None or answer.metadata_location != table_response.metadata_location \
                or answer.metadata.table_uuid != str(table_response.metadata.table_uuid):
            # Not the answer we observed (another path built it): PyIceberg's parsed view will do.
            answer = _VendedTableAnswer.model_validate({
                "metadata-location": table_response.metadata_location,
                "metadata": {"table-uuid": str(table_response.metadata.table_uuid)},
                "config": table_response.config,
                "storage-credentials": [c.model_dump() for c in table_response.storage_credentials]})
            request_body = None
        return answer, request_body

    # -- FileIOs -----------------------------------------------------------------------------------
    def _table_io(self, identifier: tuple[str, ...], table_response: TableResponse, *, staged: bool) -> FileIO:
        """The table's FileIO, configured by the catalog's properties (the user's and `/v1/config`'s) and
        the table's config (with the storage credential of the longest prefix, as PyIceberg picks it),
        never by the table's metadata properties."""
        answer, request_body = self._take_observed(table_response)
        config = dict(table_response.config)
        location = table_response.metadata.location
        vended = {**config, **self._resolve_storage_credentials(table_response.storage_credentials,
                                                                table_response.metadata_location)}
        logsafety.register_secret_properties(vended)
        signed = remote_signing_requested(config, self.properties, answer.remote_signing_config)
        # Only what a catalog may vend reaches the FileIO (trust-rules.json's allow-list), and the
        # user's own credentials only endpoints the user chose.
        properties = table_io_properties(self.name, ".".join(identifier), user=self.user_properties,
                                         catalog_properties=self.properties, answer=vended, trust=self.trust,
                                         location=location, signed=signed)
        if signed:
            return self._signing_io(identifier, properties, answer.remote_signing_config, table_response.metadata_location)
        io = load_file_io({**properties, **self._auth_manager_property()}, table_response.metadata_location)
        if self.refresher is None:
            return io
        storage_credentials = [c.model_dump() for c in answer.storage_credentials]
        if not has_credentials(answer.config) and not storage_credentials:
            return io  # nothing vended: the FileIO uses the user's own keys
        stage_request = None
        if staged and request_body is not None:
            # Re-staging must keep the location, or some catalogs stage a new one (SeaweedFS).
            stage_request = {**request_body, "location": location}
        entry = self.refresher.track(identifier, answer.config, storage_credentials, location=location, staged=staged,
                                     stage_create_request=stage_request)
        return RefreshingFileIO(io.properties, entry, self.refresher, store_aware(type(io)))

    def _signing_io(self, identifier: tuple[str, ...], table_properties: dict[str, Any],
                    signing_config: dict[str, Any] | None, metadata_location: str | None) -> FileIO:
        """A FileIO of the class PyIceberg would pick whose S3 requests the table's signer signs. Its
        signer URL is checked against the catalog's trust set here, before anything is sent."""
        name = ".".join((self.name, *identifier))
        route = self.url(Endpoints.load_table, prefixed=True, **self._split_identifier_for_path(identifier))
        route = route[len(self.uri.rstrip("/")):]
        target = signer_target(table_properties, self.properties, signing_config, self.uri, route)
        signer = self._signer_session().signer(name, target)
        # The signer holds the credentials: no key, PyIceberg signer or auth manager goes to the FileIO.
        properties = {k: v for k, v in table_properties.items()
                      if not (k.startswith("s3.") and is_secret_key(k)) and k not in (AUTH_MANAGER, S3_SIGNER)}
        chosen = type(load_file_io({k: v for k, v in table_properties.items() if k != S3_SIGNER}, metadata_location))
        if issubclass(chosen, PyArrowFileIO):
            return SigningPyArrowFileIO(properties, signer)
        if issubclass(chosen, FsspecFileIO):
            return SigningFsspecFileIO(properties, signer)
        raise ConfigError(f"table {name} is remote-signed, which works with PyIceberg's PyArrowFileIO and FsspecFileIO; "
                          f"py-io-impl={chosen.__module__}.{chosen.__name__} cannot sign: set py-io-impl to one of those")

    def _signer_session(self) -> SignerSession:
        with self._signers_lock:
            if self._signers is None:
                auth_manager = self._auth_manager
                self._signers = SignerSession(
                    self.trust, lambda: auth_manager.auth_header() if auth_manager is not None else None,
                    self._renew_token, headers=get_header_properties(self.properties),
                    verify=self._session.verify, cert=self._session.cert)
            return self._signers

    def credentials_status(self) -> list[dict[str, Any]]:
        """One row per tracked table: strategy used, renewals per strategy, expiry, failures. [] without refresh."""
        return self.refresher.status() if self.refresher else []

    def close(self) -> None:
        """Stop the background refresher; the catalog stays usable with the keys it has."""
        if self.refresher is not None:
            self.refresher.close()
        if self._signers is not None:
            self._signers.close()
        super().close()

    # -- commits -----------------------------------------------------------------------------------
    def commit_table(self, table: Table, requirements: tuple, updates: tuple) -> CommitTableResponse:
        from pyiceberg.catalog.rest import Capability, TableIdentifier
        from pyiceberg.table import Namespace

        self._check_endpoint(Capability.V1_UPDATE_TABLE)
        identifier = table.name()
        request = CommitTableRequest(identifier=TableIdentifier(namespace=Namespace(list(identifier[:-1])), name=identifier[-1]),
                                     requirements=requirements, updates=updates)
        url = self.url(Endpoints.update_table, prefixed=True, **self._split_identifier_for_path(request.identifier))
        guard = GuardedCommit(
            self._session, url, request.model_dump_json().encode("utf-8"), table=".".join(identifier),
            requirements=requirements, updates=updates, load_metadata=lambda: self._load_raw(identifier),
            idempotency_lifetime_s=self.idempotency_key_lifetime_s, policy=self.commit_policy,
            on_401=self._refresh_token,
        )
        response = guard.run()
        io = getattr(table, "io", None)
        if isinstance(io, RefreshingFileIO) and any(isinstance(r, AssertCreate) for r in requirements) \
                and self.refresher is not None:
            self.refresher.committed(io.entry)
        return response

    def _load_raw(self, identifier: Identifier) -> TableResponse | None:
        """The table's LoadTableResult, None if it does not exist (for reconciliation; no FileIO built)."""
        response = self._session.get(
            self.url(Endpoints.load_table, prefixed=True, **self._split_identifier_for_path(identifier)),
            timeout=(5.0, 60.0),
        )
        self._observed.last = (None, None)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return TableResponse.model_validate_json(response.content)


class _VendedCredential(StorageCredential):
    """PyIceberg's StorageCredential plus the proposed `storage-refresh-token` (spec PR 15280) its model drops."""

    storage_refresh_token: str | None = Field(alias="storage-refresh-token", default=None)  # mypy: an alias is a literal

    def __repr__(self) -> str:  # never the keys or the token
        return f"_VendedCredential(prefix={self.prefix!r})"


class _TableIdentity(IcebergBaseModel):
    table_uuid: str = Field(alias="table-uuid")


class _VendedTableAnswer(IcebergBaseModel):
    """What refresh needs from a load/create answer (PyIceberg's `TableResponse` without the metadata
    it already parsed, plus the refresh tokens it drops)."""

    metadata_location: str | None = Field(alias="metadata-location", default=None)
    metadata: _TableIdentity
    config: dict[str, str] = Field(default_factory=dict)
    storage_credentials: list[_VendedCredential] = Field(alias="storage-credentials", default_factory=list)
    remote_signing_config: Any = Field(alias="remote-signing-config", default=None)

    def __repr__(self) -> str:
        return f"_VendedTableAnswer({self.metadata_location!r}, credentials={len(self.storage_credentials)})"


_M = TypeVar("_M", bound=IcebergBaseModel)


def _parse(model: type[_M], body: bytes) -> _M | None:
    """`body` as `model`, or None when it is not that shape (PyIceberg reports its own errors)."""
    try:
        return model.model_validate_json(body)
    except ValidationError:
        return None


def _json_bytes(raw: Any) -> dict | None:
    try:
        body = json.loads(raw) if raw else None
    except (TypeError, ValueError):
        return None
    return body if isinstance(body, dict) else None
