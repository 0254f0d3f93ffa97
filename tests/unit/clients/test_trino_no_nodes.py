"""run_query (clients/trino_server.py) against a loopback server speaking Trino's statement protocol:
a query Trino refuses with NO_NODES_AVAILABLE (as a just-started Trino does while its node manager
has not read that it serves the catalog) is asked again; any other error is not."""

from __future__ import annotations

import json

import pytest

from pyspark_catalog_ext.clients.trino_server import run_query
from tests.servers.base import ThreadedServer, read_request_body

trino = pytest.importorskip("trino", reason="Trino's Python client is not installed: pip install 'pyspark-catalog-ext[trino]'")


class StatementServer(ThreadedServer):
    """Answers each `POST /v1/statement` with the next of `errors` (a Trino error name), then with one row."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__()
        self.errors = list(errors)
        self.statements: list[str] = []

    def handle(self, h) -> None:
        self.statements.append(read_request_body(h).decode())
        n = len(self.statements)
        answer = {"id": f"q{n}", "infoUri": f"{self.url}/ui/q{n}", "stats": {"state": "FINISHED"}}
        if self.errors:
            name = self.errors.pop(0)
            answer["stats"]["state"] = "FAILED"
            answer["error"] = {"message": f"{name} here", "errorCode": 65540, "errorName": name,
                               "errorType": "INTERNAL_ERROR"}
        else:
            answer.update(columns=[{"name": "n", "type": "bigint", "typeSignature": {"rawType": "bigint", "arguments": []}}],
                          data=[[n]])
        body = json.dumps(answer).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


def _cursor(server: StatementServer):
    return trino.dbapi.connect(host="127.0.0.1", port=server.port, user="t").cursor()


def test_a_query_refused_for_want_of_nodes_is_asked_again_until_it_runs():
    with StatementServer(["NO_NODES_AVAILABLE", "NO_NODES_AVAILABLE"]) as server:
        assert run_query(_cursor(server), "SELECT count(*) FROM lake.ns.t") == [[3]]
    assert server.statements == ["SELECT count(*) FROM lake.ns.t"] * 3


def test_any_other_error_is_raised_at_once():
    with StatementServer(["TABLE_NOT_FOUND"]) as server:
        with pytest.raises(trino.exceptions.TrinoQueryError, match="TABLE_NOT_FOUND"):
            run_query(_cursor(server), "SELECT 1")
    assert len(server.statements) == 1


def test_the_wait_for_nodes_is_bounded():
    with StatementServer(["NO_NODES_AVAILABLE"] * 10) as server:
        with pytest.raises(trino.exceptions.TrinoQueryError, match="NO_NODES_AVAILABLE"):
            run_query(_cursor(server), "SELECT 1", wait_seconds=1.5)
    assert 2 <= len(server.statements) <= 3
