"""The embedded lakehouse's answers to the Iceberg REST views routes.

SeaweedFS has no views routes, and Trino's connector asks for a view (`GET .../views/{name}`)
before it loads a table, reading only a `NoSuchViewException` as "not a view". So the catalog
proxies answer these routes as the REST spec says for a catalog with no view: a list is empty;
load, exists, replace, drop and rename are 404 `NoSuchViewException`; create is 406. A read first
asks SeaweedFS for the namespace with the client's own credentials, so its errors are SeaweedFS's.

Why: docs/lakehouse.md, section 'Table locations' ("One reading of each request").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from pyspark_catalog_ext.lakehouse.canonical import Route, describe

__all__ = ["VIEW_ROUTES", "answer_view"]

VIEW_ROUTES = frozenset({"list-views", "create-view", "load-view", "view-exists", "replace-view", "drop-view", "rename-view"})
_JSON = {"Content-Type": "application/json"}

Answer = tuple[int, bytes, Mapping[str, str]]
Send = Callable[[str, bytes | None], Answer]  # (canonical target, body) -> upstream answer, with the client's method


def _error(status: int, kind: str, message: str) -> Answer:
    return status, json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode(), _JSON


def answer_view(route: Route, send: Send) -> Answer:
    """The answer to a views route (`route.name` in VIEW_ROUTES); `send` forwards a request upstream."""
    if route.name == "create-view":
        return _error(406, "UnsupportedOperationException", "this lakehouse's catalog (SeaweedFS) stores no views; create a table instead")
    if route.name == "rename-view":
        return _error(404, "NoSuchViewException", "no view to rename: this lakehouse's catalog (SeaweedFS) stores no views")
    if route.name in ("list-views", "load-view", "view-exists"):
        # GET or HEAD of the namespace, as the client asked for the view: its existence and the client's rights
        namespace = Route("load-namespace", route.method, ("v1", "{prefix}", "namespaces", "{namespace}"), route.prefix, route.namespace)
        status, content, headers = send(namespace.target(), None)
        if not 200 <= status < 300:
            return status, content, headers
    if route.name == "list-views":
        return 200, json.dumps({"identifiers": []}).encode(), _JSON
    return _error(404, "NoSuchViewException", f"The given view does not exist: {describe(route)}")
