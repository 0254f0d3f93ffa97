"""Evidence of each HTTP exchange with a catalog (`CatalogClient.exchanges`, the doctor's): the
`Exchange` record, the operation a route stands for, and query strings with secret values masked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark_catalog_ext.secret_keys import is_secret_param

__all__ = ["Exchange", "mask_query", "operation"]


@dataclass(frozen=True)
class Exchange:
    """Evidence of one HTTP exchange. Contains no secrets (query secrets are masked)."""

    operation: str
    method: str
    path: str
    status: int | None
    elapsed_ms: float
    attempt: int
    error: str | None = None
    idempotency_key: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "method": self.method, "path": self.path, "status": self.status,
                "elapsed_ms": round(self.elapsed_ms, 1), "attempt": self.attempt, "error": self.error,
                "idempotency_key": self.idempotency_key}


def mask_query(query: str) -> str:
    if not query:
        return ""
    masked = []
    for pair in query.split("&"):
        name, sep, _ = pair.partition("=")
        masked.append(f"{name}=***" if sep and is_secret_param(name) else pair)
    return "?" + "&".join(masked)


# Operation names in evidence, by the route's last fixed segment (most specific first).
_ROUTES = (("/v1/config", "config"), ("/oauth/tokens", "oauth_token"), ("/credentials", "load_credentials"),
           ("/applicable-policies", "applicable_policies"), ("/notifications", "notification"),
           ("/transactions/commit", "commit_transaction"), ("/tables/rename", "rename_table"))


def operation(method: str, path: str) -> str:
    for tail, name in _ROUTES:
        if tail in path:
            return name
    parts = path.rstrip("/").split("/")
    if "tables" in parts:
        at_table = parts[-2] == "tables"
        return {("GET", True): "load_table", ("HEAD", True): "table_exists", ("POST", True): "commit_table",
                ("DELETE", True): "drop_table", ("GET", False): "list_tables",
                ("POST", False): "create_table"}.get((method, at_table), f"{method} tables")
    if "namespaces" in parts:
        at_namespace = parts[-1] != "namespaces"
        return {("GET", True): "load_namespace", ("HEAD", True): "namespace_exists", ("DELETE", True): "drop_namespace",
                ("GET", False): "list_namespaces", ("POST", False): "create_namespace"}.get(
                    (method, at_namespace), f"{method} namespaces")
    return f"{method} {path}"
