"""The embedded lakehouse's answers to the Iceberg REST views routes.

SeaweedFS's catalog stores no views and has no views routes (it answers them `404 NotFound`, a
path it does not know). Clients that speak views ask before they load a table: Trino's Iceberg
connector sends `GET .../views/{name}` first and reads only a `NoSuchViewException` as "not a
view". So the catalog proxies (the location guard, the remote signer) answer these routes here,
as the REST spec says for a catalog that has no view:

* list: the namespace's views, none (`{"identifiers": []}`);
* load and exists: 404 `NoSuchViewException`; replace, drop and rename likewise (there is no view
  to change);
* create: 406 `UnsupportedOperationException`, saying that this catalog stores no views.

A read first asks SeaweedFS for the namespace with the client's own method and credentials, so a
missing namespace is SeaweedFS's own `NoSuchNamespaceException` and a client without a valid
token gets SeaweedFS's 401, exactly as for a table.
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
