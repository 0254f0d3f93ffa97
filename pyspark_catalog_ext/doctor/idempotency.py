"""Which operations a catalog de-duplicates under an Idempotency-Key, measured one by one.

A catalog advertises one `idempotency-key-lifetime` for all of itself, but need not replay every
operation under it: Polaris 1.7.0 replays `createTable` and `updateTable` and answers a repeated
staged create's commit or namespace create 409. So the doctor sends each of four operations twice
with one key and says, per operation, what the second answer was: replayed (the stored answer),
refused (409: executed again, and refused) or executed twice (a different answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark_catalog_ext.catalog.raw_calls import IDEMPOTENCY_HEADER
from pyspark_catalog_ext.commit.idempotency import uuid7
from pyspark_catalog_ext.doctor.context import create_updates
from pyspark_catalog_ext.errors import CatalogConflictError, CatalogError

__all__ = ["OPERATIONS", "REPLAYED", "measure"]

OPERATIONS = ("commit", "create", "staged-create commit", "namespace create")
REPLAYED = "replayed"
REFUSED = "refused (409)"
TWICE = "executed twice"


def measure(ctx: Any) -> dict[str, str]:
    """operation -> replayed / refused (409) / executed twice / "failed: ..." (one line)."""
    out: dict[str, str] = {}
    for name, run in (("commit", _commit), ("create", _create), ("staged-create commit", _staged_commit),
                      ("namespace create", _namespace_create)):
        try:
            out[name] = run(ctx)
        except CatalogError as exc:
            out[name] = f"failed: HTTP {getattr(exc, 'status', None)}"
    return out


def _twice(send: Callable[[dict[str, str]], Any], same: Callable[[Any, Any], bool]) -> str:
    headers = {IDEMPOTENCY_HEADER: str(uuid7())}
    first = send(headers)
    try:
        second = send(headers)
    except CatalogConflictError:
        return REFUSED
    return REPLAYED if same(first, second) else TWICE


def _commit(ctx: Any) -> str:
    created = ctx.create_table("i_commit")
    uuid = created["metadata"]["table-uuid"]
    ident = (ctx.namespace, "i_commit")
    updates = [{"action": "set-properties", "updates": {"doctor.idempotency": "1"}}]

    def send(headers: dict[str, str]) -> Any:
        return ctx.client.commit_table_json(ident, [{"type": "assert-table-uuid", "uuid": uuid}], updates,
                                            idempotency_key=headers[IDEMPOTENCY_HEADER])

    return _twice(send, lambda a, b: a.get("metadata-location") == b.get("metadata-location"))


def _create(ctx: Any) -> str:
    body = ctx.table_body("i_create")

    def send(headers: dict[str, str]) -> Any:
        return ctx.client.call("POST", f"v1/{{prefix}}/namespaces/{ctx.namespace}/tables", json=body, headers=headers)

    return _twice(send, lambda a, b: (a or {}).get("metadata-location") == (b or {}).get("metadata-location"))


def _staged_commit(ctx: Any) -> str:
    staged = ctx.stage_table("i_staged")
    updates = create_updates(staged["metadata"])

    def send(headers: dict[str, str]) -> Any:
        return ctx.client.commit_table_json((ctx.namespace, "i_staged"), [{"type": "assert-create"}], updates,
                                            idempotency_key=headers[IDEMPOTENCY_HEADER])

    return _twice(send, lambda a, b: a.get("metadata-location") == b.get("metadata-location"))


def _namespace_create(ctx: Any) -> str:
    namespace = f"{ctx.namespace}_idem"
    ctx.cleanup.add(f"drop namespace {namespace}", lambda: _drop(ctx, namespace))

    def send(headers: dict[str, str]) -> Any:
        return ctx.client.call("POST", "v1/{prefix}/namespaces", json={"namespace": [namespace], "properties": {}},
                               headers=headers)

    return _twice(send, lambda a, b: True)  # two 2xx: the second was not refused as "already exists"


def _drop(ctx: Any, namespace: str) -> str:
    if not ctx.client.has_namespace(namespace):
        return f"namespace {namespace} was not created"
    ctx.client.remove_namespace(namespace)
    return f"dropped namespace {namespace}"
