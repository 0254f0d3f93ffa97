"""Table-maintenance policies, in Apache Polaris's shape: where they come from and what they say.

Two sources give the same `ApplicablePolicy` records: `PolarisPolicySource` (Polaris's policy API,
`GET /polaris/v1/{prefix}/applicable-policies`; the server resolves inheritance) and
`FilePolicySource` (a JSON file with each policy's attachment `target`, as in Polaris's
`AttachPolicyRequest`; inheritance resolved here by the same rule: table over namespace over
catalog). The content of the four predefined types (schema `2025-02-03`) is validated with
pydantic models mirroring Polaris's JSON schemas.

Why: docs/maintenance.md, section 'Table maintenance from catalog policies'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pyspark_catalog_ext.catalog.reader import CatalogReader
from pyspark_catalog_ext.errors import CatalogNotFoundError, CatalogUnsupportedError, ConfigError, PolicyApiUnavailableError

__all__ = [
    "MAINTENANCE_TYPES",
    "ApplicablePolicy",
    "PolicyContent",
    "OrphanFileRemovalContent",
    "PolicySource",
    "PolarisPolicySource",
    "FilePolicySource",
    "parse_content",
    "effective_policies",
]

DATA_COMPACTION = "system.data-compaction"
METADATA_COMPACTION = "system.metadata-compaction"
SNAPSHOT_EXPIRY = "system.snapshot-expiry"
ORPHAN_FILE_REMOVAL = "system.orphan-file-removal"
MAINTENANCE_TYPES = (DATA_COMPACTION, METADATA_COMPACTION, SNAPSHOT_EXPIRY, ORPHAN_FILE_REMOVAL)
NS_SEPARATOR = "\x1f"  # the spec's separator of namespace levels in the `namespace` query parameter
MAX_PAGES = 1000  # a server that keeps answering next-page-tokens must not loop us forever

ConfigValue = bool | int | float | str


class PolicyContent(BaseModel):
    """Content of system.data-compaction / metadata-compaction / snapshot-expiry (2025-02-03)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    version: Literal["2025-02-03"] = "2025-02-03"
    enable: bool
    config: dict[str, ConfigValue] = Field(default_factory=dict)


class OrphanFileRemovalContent(PolicyContent):
    """Content of system.orphan-file-removal: adds the age threshold and the locations to search."""

    max_orphan_file_age_in_days: float | None = None
    locations: list[str] | None = None


class ApplicablePolicy(BaseModel):
    """One entry of `GetApplicablePoliciesResponse.applicable-policies` (content is a JSON string)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")
    policy_type: str = Field(alias="policy-type")
    name: str
    version: int
    inheritable: bool
    inherited: bool = False
    namespace: list[str] = Field(default_factory=list)
    content: str | None = None
    description: str | None = None
    #: where it is attached ("table", "namespace a.b", "catalog"); only known for file policies
    attached_to: str | None = None

    @property
    def origin(self) -> str:
        """Where this policy applies from, for plans and reports."""
        if self.attached_to:
            return self.attached_to
        where = ".".join(self.namespace) or "catalog level"
        return f"inherited (policy {where}.{self.name})" if self.inherited else f"attached to the table (policy {where}.{self.name})"


def _one_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "content"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_content(policy: ApplicablePolicy) -> PolicyContent:
    """The validated content of a maintenance policy; ConfigError (one line) if it is invalid."""
    model = OrphanFileRemovalContent if policy.policy_type == ORPHAN_FILE_REMOVAL else PolicyContent
    where = f"policy {'.'.join(policy.namespace + [policy.name])} ({policy.policy_type} v{policy.version})"
    try:
        data = json.loads(policy.content or "")
    except ValueError:
        raise ConfigError(f"{where}: content is not JSON; it must be a JSON object such as "
                          '{"version": "2025-02-03", "enable": true}') from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: content must be a JSON object with at least \"enable\"")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{where}: invalid content: {_one_line(exc)}") from None


def effective_policies(policies: Iterable[ApplicablePolicy]) -> dict[str, ApplicablePolicy]:
    """The one policy per maintenance type that governs a table.

    Polaris already applies the override rule for inheritable types; what can still come back is a
    directly attached policy next to an inherited one: the direct one wins, then the deepest
    namespace. Two directly attached policies of one type are ambiguous: ConfigError.
    """
    chosen: dict[str, ApplicablePolicy] = {}
    for policy in policies:
        if policy.policy_type not in MAINTENANCE_TYPES:
            continue
        current = chosen.get(policy.policy_type)
        if current is None:
            chosen[policy.policy_type] = policy
            continue
        if not current.inherited and not policy.inherited:
            raise ConfigError(f"two {policy.policy_type} policies ({current.name}, {policy.name}) apply directly to the "
                              "same table; detach one of them")
        rank = lambda p: (not p.inherited, len(p.namespace))  # noqa: E731
        if rank(policy) > rank(current):
            chosen[policy.policy_type] = policy
    return chosen


class PolicySource(Protocol):
    """Where policies come from: the policies applicable to one table."""

    def applicable(self, namespace: Sequence[str], table: str) -> list[ApplicablePolicy]: ...


class PolarisPolicySource:
    """Polaris's `applicable-policies` endpoint, on the catalog's own session: inside Spark the Spark
    catalog's (`SparkCatalogReader`), else `CatalogClient`'s (auth, retries)."""

    def __init__(self, client: CatalogReader, page_size: int = 100) -> None:
        self.client = client
        self.page_size = page_size

    def applicable(self, namespace: Sequence[str], table: str) -> list[ApplicablePolicy]:
        out: list[ApplicablePolicy] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            params = {"namespace": NS_SEPARATOR.join(namespace), "target-name": table, "page-size": str(self.page_size)}
            if token:
                params["page-token"] = token
            try:
                answer = self.client.call("GET", "/polaris/v1/{prefix}/applicable-policies", params=params) or {}
            except (CatalogNotFoundError, CatalogUnsupportedError) as exc:
                if isinstance(exc, CatalogUnsupportedError) or "does not implement" in str(exc):
                    raise PolicyApiUnavailableError(
                        f"the catalog at {self.client.safe_uri} has no Polaris policy API ({exc.status or 404} on "
                        "applicable-policies); pass a policy file (--policy-file / policy_file=)") from None
                raise
            try:
                out += [ApplicablePolicy.model_validate(p) for p in answer.get("applicable-policies", [])]
            except ValidationError as exc:
                raise ConfigError(f"the catalog's applicable-policies answer is malformed: {_one_line(exc)}") from None
            token = answer.get("next-page-token")
            if not token:
                return out
        raise ConfigError(f"the catalog kept paging applicable-policies past {MAX_PAGES} pages; check the server")


class _Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["catalog", "namespace", "table-like"]
    path: list[str] = Field(default_factory=list)


class _FilePolicy(ApplicablePolicy):
    target: _Target


class _PolicyFile(BaseModel):
    policies: list[_FilePolicy]


class FilePolicySource:
    """Policies from a JSON file: `{"policies": [{policy fields..., "target": {...}}]}`.

    Policy fields are those of Polaris's `Policy` (`policy-type`, `name`, `version`,
    `inheritable`, `content` as a JSON string, optional `namespace`); `target` is the attachment.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            data = json.loads(self.path.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read policy file {self.path}: {exc.strerror}; check --policy-file") from None
        except ValueError as exc:
            raise ConfigError(f"policy file {self.path} is not JSON ({exc}); fix it") from None
        try:
            self.policies = _PolicyFile.model_validate(data).policies
        except ValidationError as exc:
            raise ConfigError(f"policy file {self.path}: {_one_line(exc)}") from None

    def applicable(self, namespace: Sequence[str], table: str) -> list[ApplicablePolicy]:
        """Polaris's rule: inheritable policies from the catalog, each enclosing namespace and the
        table itself, the nearest one per type; non-inheritable ones only when attached directly."""
        full = [*namespace, table]
        best: dict[str, tuple[int, _FilePolicy]] = {}
        direct: list[ApplicablePolicy] = []
        for policy in self.policies:
            target = policy.target
            depth = len(target.path)
            if target.type == "table-like":
                applies = target.path == full
            elif target.type == "namespace":
                applies = target.path == list(namespace[:depth]) and depth <= len(namespace)
            else:
                applies, depth = True, 0
            if not applies:
                continue
            is_direct = target.type == "table-like"
            where = {"table-like": "attached to the table", "catalog": "inherited from the catalog"}.get(
                target.type, f"inherited from namespace {'.'.join(target.path)}")
            record = policy.model_copy(update={"inherited": not is_direct, "attached_to": where})
            if not policy.inheritable:
                if is_direct:
                    direct.append(ApplicablePolicy.model_validate(record.model_dump(by_alias=True)))
                continue
            if policy.policy_type not in best or depth > best[policy.policy_type][0]:
                best[policy.policy_type] = (depth, record)
        chosen = [ApplicablePolicy.model_validate(p.model_dump(by_alias=True)) for _, p in best.values()]
        return chosen + direct
