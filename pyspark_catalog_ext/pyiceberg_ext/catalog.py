"""`GuardedRestCatalog`: PyIceberg's RestCatalog with refreshing table FileIOs and guarded commits.

Built on `catalog.rest.CatalogClient` (PyIceberg's RestCatalog with bounded calls, evidence, the
advertised `idempotency-key-lifetime` and Idempotency-Keys on mutations). Seams into PyIceberg,
all on the subclass (no patching):
- `_create_session`: adds a `requests` response hook that keeps the raw JSON of each table
  load/create answer (PyIceberg's models drop `storage-refresh-token`, and re-staging needs the
  stage-create body);
- `_response_to_table` / `_response_to_staged_table`: wrap the FileIO PyIceberg built in a
  `RefreshingFileIO` tied to the table's `TableCredentials`;
- `commit_table`: sent through `commits.GuardedCommit`.
Select it from `.pyiceberg.yaml` with `py-catalog-impl: pyspark_catalog_ext.pyiceberg_ext.GuardedRestCatalog`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import Any, TypeVar

from pydantic import Field, ValidationError
from pyiceberg.catalog.rest import Endpoints, TableResponse
from pyiceberg.catalog.rest.scan_planning import StorageCredential
from pyiceberg.table import CommitTableRequest, CommitTableResponse, StagedTable, Table
from pyiceberg.table.update import AssertCreate
from pyiceberg.typedef import IcebergBaseModel, Identifier
from pyiceberg.utils.properties import property_as_bool
from requests import Response, Session

from pyspark_catalog_ext.catalog.rest import CatalogClient, PurgeRequiredError
from pyspark_catalog_ext.credentials.policy import RefreshPolicy
from pyspark_catalog_ext.credentials.sources import CredentialSource
from pyspark_catalog_ext.pyiceberg_ext.commits import GuardedCommit
from pyspark_catalog_ext.pyiceberg_ext.fileio import RefreshingFileIO
from pyspark_catalog_ext.pyiceberg_ext.refresher import PROPERTY_PREFIX, CredentialRefresher, refresh_policy

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
        super().__init__(name, **properties)
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
    def _response_to_table(self, identifier_tuple: tuple[str, ...], table_response: TableResponse) -> Table:
        table = super()._response_to_table(identifier_tuple, table_response)
        return self._refreshing(table, identifier_tuple, table_response, staged=False)

    def _response_to_staged_table(self, identifier_tuple: tuple[str, ...], table_response: TableResponse) -> StagedTable:
        table = super()._response_to_staged_table(identifier_tuple, table_response)
        return self._refreshing(table, identifier_tuple, table_response, staged=True)

    def _refreshing(self, table: Any, identifier: tuple[str, ...], table_response: TableResponse, *, staged: bool) -> Any:
        answer, request_body = self._take_observed(table_response)
        if self.refresher is None:
            return table
        config = answer.config
        storage_credentials = [c.model_dump() for c in answer.storage_credentials]
        if "s3.access-key-id" not in config and not storage_credentials:
            return table  # nothing vended: the FileIO uses the user's own keys
        location = table_response.metadata.location
        stage_request = None
        if staged and request_body is not None:
            # Re-staging must keep the location, or some catalogs stage a new one (SeaweedFS).
            stage_request = {**request_body, "location": location}
        entry = self.refresher.track(identifier, config, storage_credentials, location=location, staged=staged,
                                     stage_create_request=stage_request)
        table.io = RefreshingFileIO(table.io.properties, entry, self.refresher, type(table.io))
        return table

    def credentials_status(self) -> list[dict[str, Any]]:
        """One row per tracked table: strategy used, renewals per strategy, expiry, failures. [] without refresh."""
        return self.refresher.status() if self.refresher else []

    def close(self) -> None:
        """Stop the background refresher; the catalog stays usable with the keys it has."""
        if self.refresher is not None:
            self.refresher.close()
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

    storage_refresh_token: str | None = Field(alias="storage-refresh-token", default=None)

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
