"""CatalogClient, auth strategies and retry/idempotency behaviour.

Two kinds of server:
* a scripted HTTP server on 127.0.0.1 (http.server in a thread) whose responses each test
  lays out, and which records every request it receives;
* a real SeaweedFS from the `lakehouse` fixture (Iceberg REST catalog with vended credentials).

No test sleeps for real beyond a ~50 ms read timeout: retries use a fake clock.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import ssl
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest

from pyspark_catalog_ext.catalog.rest_auth import (
    BasicAuth,
    BearerToken,
    NoAuth,
    OAuth2ClientCredentials,
    PyIcebergAuth,
    SigV4,
    auth_from_conf,
)
from pyspark_catalog_ext.catalog.rest_client import (
    AmbiguousMutationError,
    CatalogClient,
    Exchange,
    encode_namespace,
)
from pyspark_catalog_ext.catalog.retry import RetryPolicy
from pyspark_catalog_ext.errors import (
    CatalogAuthError,
    CatalogConflictError,
    CatalogError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    ConfigError,
)
from tests.fake_clock import FakeClock as _FakeClock
from tests.helpers import free_port

CLIENT_SECRET = "cs-Zq9!secretvalue-77f1"
TOKEN_1 = "tok1-AAAAsecretBBBB-0001"
TOKEN_2 = "tok2-CCCCsecretDDDD-0002"
REFRESH_TOKEN = "srt-EEEEsecretFFFF-0003"
AWS_SECRET = "awsSECRETkeyGGGG/HHHH+0004"
ALL_SECRETS = (CLIENT_SECRET, TOKEN_1, TOKEN_2, REFRESH_TOKEN, AWS_SECRET)
UUID7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


# ---------------------------------------------------------------------------- scripted server
@dataclass
class R:
    """A scripted response. body: dict/list → JSON, str/bytes → raw."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    action: str | None = None  # "drop": close without answering; "hang": never answer in time


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None

    def json(self) -> Any:
        return json.loads(self.body)


NOT_FOUND = R(404, {"error": {"message": "Path not found", "type": "NotFound", "code": 404}})


class Scripted:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[tuple[str, str], list[R]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.release = threading.Event()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else ~40 ms delayed-ACK stalls per keep-alive request

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path, _, query = self.path.partition("?")
                with scripted.lock:
                    scripted.seen.append(Seen(self.command, path, query, dict(self.headers.items()), body))
                    queue = scripted.routes.get((self.command, path))
                    r = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else NOT_FOUND
                if r.action == "drop":
                    self.close_connection = True
                    return
                if r.action == "hang":
                    scripted.release.wait(10)
                    self.close_connection = True
                    return
                if isinstance(r.body, (dict, list)):
                    payload, ctype = json.dumps(r.body).encode(), "application/json"
                elif isinstance(r.body, str):
                    payload, ctype = r.body.encode(), "text/plain"
                else:
                    payload, ctype = (r.body or b""), "application/octet-stream"
                self.send_response(r.status)
                if payload:
                    self.send_header("Content-Type", r.headers.get("Content-Type", ctype))
                for k, v in r.headers.items():
                    if k != "Content-Type":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.uri = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def on(self, method: str, path: str, *responses: R) -> None:
        """Responses are served in order; the last one repeats."""
        with self.lock:
            self.routes[(method, path)] = list(responses)

    def config(self, prefix: str | None = "wh", lifetime: str | None = None,
               endpoints: list[str] | None = None) -> None:
        body: dict[str, Any] = {"defaults": {"warehouse": "s3://wh"}, "overrides": {}}
        if prefix:
            body["overrides"]["prefix"] = prefix
        if lifetime:
            body["idempotency-key-lifetime"] = lifetime
        if endpoints is not None:
            body["endpoints"] = endpoints
        self.on("GET", "/v1/config", R(200, body))

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen
                    if (method is None or s.method == method) and (path is None or s.path == path)]

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def srv() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.close()


class FakeClock(_FakeClock):
    def __init__(self) -> None:
        super().__init__(start=5000.0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(srv: Scripted, clock: FakeClock, *, attempts: int = 4, **kw: Any) -> CatalogClient:
    policy = RetryPolicy(max_attempts=attempts, base_delay=0.1, max_delay=1.0, total_timeout=30.0,
                         jitter=False, retry_after_cap=20.0, clock=clock.now, sleep=clock.sleep)
    kw.setdefault("timeout", (2.0, 5.0))
    return CatalogClient(srv.uri, kw.pop("warehouse", "wh"), retry=policy, **kw)


def assert_no_secrets(*texts: object) -> None:
    for text in texts:
        for secret in ALL_SECRETS:
            assert secret not in str(text), f"secret leaked into: {text}"


TABLE_RESULT = {
    "metadata-location": "s3://wh/db/t/metadata/v1.metadata.json",
    "metadata": {"format-version": 2, "table-uuid": "u-1", "location": "s3://wh/db/t"},
    "config": {},
}
COMMIT_RESULT = {"metadata-location": "s3://wh/db/t/metadata/v2.metadata.json", "metadata": {"table-uuid": "u-1"}}
T_PATH = "/v1/wh/namespaces/db/tables/t"


# ---------------------------------------------------------------------------- config and paths
def test_config_merges_and_derives_prefix_endpoints_lifetime(srv: Scripted, clock: FakeClock) -> None:
    srv.on("GET", "/v1/config", R(200, {
        "defaults": {"prefix": "ignored", "a": "1", "b": "1"},
        "overrides": {"prefix": "cat/one", "b": "2"},
        "endpoints": ["GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces/{namespace}/tables"],
        "idempotency-key-lifetime": "PT30M",
    }))
    c = make(srv, clock, warehouse="my wh")
    c.config()
    assert c.prefix == "cat/one"
    assert c.properties == {"prefix": "cat/one", "a": "1", "b": "2"}
    assert c.idempotency_key_lifetime == "PT30M" and c.idempotency_key_lifetime_seconds == 1800.0
    assert c.idempotency_enabled
    assert c.supports_endpoint("GET /v1/{prefix}/namespaces") is True
    assert c.supports_endpoint("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials") is False
    assert parse_qs(srv.requests("GET", "/v1/config")[0].query) == {"warehouse": ["my wh"]}


def test_config_without_advertisements(srv: Scripted, clock: FakeClock) -> None:
    srv.config(prefix=None)
    c = make(srv, clock, warehouse=None)
    c.config()
    assert c.prefix is None and c.endpoints is None and not c.idempotency_enabled
    assert c.supports_endpoint("GET /v1/{prefix}/namespaces") is None
    assert srv.requests("GET", "/v1/config")[0].query == ""
    srv.on("GET", "/v1/namespaces", R(200, {"namespaces": [["a"]]}))
    assert c.list_namespaces() == [("a",)]  # no prefix segment


def test_namespace_and_table_encoding_on_the_wire(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    assert encode_namespace(("a", "b c")) == "a%1Fb%20c"
    assert encode_namespace("a.b") == "a%1Fb"
    srv.on("GET", "/v1/wh/namespaces/a%1Fb%2Fx/tables/my%20t%2F1", R(200, TABLE_RESULT))
    c = make(srv, clock)
    assert c.load_table(("a", "b/x"), "my t/1")["metadata"]["table-uuid"] == "u-1"
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": [["a", "b"]]}))
    assert c.list_namespaces(parent="a") == [("a", "b")]
    assert parse_qs(srv.requests("GET", "/v1/wh/namespaces")[0].query) == {"parent": ["a"]}
    c.list_namespaces(parent=("a", "b"))
    assert srv.requests("GET", "/v1/wh/namespaces")[-1].query == "parent=a%1Fb"
    with pytest.raises(ConfigError):
        c.load_table(("a", ""), "t")


def test_config_is_loaded_once_even_with_threads(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": [["db"]]}))
    c = make(srv, clock)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                assert c.list_namespaces() == [("db",)]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(srv.requests("GET", "/v1/config")) == 1
    assert len(srv.requests("GET", "/v1/wh/namespaces")) == 80


def test_pagination_is_followed(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces/db/tables",
           R(200, {"identifiers": [{"namespace": ["db"], "name": "a"}], "next-page-token": "p2"}),
           R(200, {"identifiers": [{"namespace": ["db"], "name": "b"}], "next-page-token": None}))
    tables = make(srv, clock).list_tables("db")
    assert [t.name for t in tables] == ["a", "b"] and tables[0].namespace == ("db",)
    assert parse_qs(srv.requests("GET", "/v1/wh/namespaces/db/tables")[1].query) == {"pageToken": ["p2"]}


def test_methods_send_the_spec_requests(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/wh/namespaces", R(200, {"namespace": ["db"], "properties": {"k": "v"}}))
    srv.on("POST", "/v1/wh/namespaces/db/tables", R(200, TABLE_RESULT))
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    srv.on("DELETE", T_PATH, R(204))
    srv.on("POST", "/v1/wh/tables/rename", R(204))
    srv.on("POST", "/v1/wh/namespaces/db/register", R(200, TABLE_RESULT))
    srv.on("POST", "/v1/wh/transactions/commit", R(204))
    srv.on("HEAD", T_PATH, R(204))
    srv.on("HEAD", "/v1/wh/namespaces/db/tables/gone", NOT_FOUND)
    srv.on("DELETE", "/v1/wh/namespaces/db", R(204))
    c = make(srv, clock)
    c.create_namespace("db", {"k": "v"})
    assert srv.requests("POST", "/v1/wh/namespaces")[0].json() == {"namespace": ["db"], "properties": {"k": "v"}}
    c.create_table("db", {"name": "t", "schema": {"type": "struct", "fields": []}}, stage_create=True)
    seen = srv.requests("POST", "/v1/wh/namespaces/db/tables")[0]
    assert seen.json()["stage-create"] is True and seen.json()["name"] == "t"
    assert seen.header("X-Iceberg-Access-Delegation") == "vended-credentials"
    out = c.commit_table("db", "t", [{"type": "assert-create"}], [{"action": "assign-uuid", "uuid": "u-1"}])
    assert out["metadata-location"].endswith("v2.metadata.json")
    assert srv.requests("POST", T_PATH)[0].json() == {
        "identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [{"type": "assert-create"}],
        "updates": [{"action": "assign-uuid", "uuid": "u-1"}],
    }
    assert c.drop_table("db", "t", purge=True) is None
    assert srv.requests("DELETE", T_PATH)[0].query == "purgeRequested=true"
    c.rename_table("db", "t", "db2", "t2")
    assert srv.requests("POST", "/v1/wh/tables/rename")[0].json() == {
        "source": {"namespace": ["db"], "name": "t"}, "destination": {"namespace": ["db2"], "name": "t2"}}
    c.register_table("db", "t", "s3://wh/db/t/metadata/v1.metadata.json")
    assert srv.requests("POST", "/v1/wh/namespaces/db/register")[0].json()["metadata-location"].endswith("v1.metadata.json")
    c.commit_transaction([{"identifier": {"namespace": ["db"], "name": "t"}, "requirements": [], "updates": []}])
    assert "table-changes" in srv.requests("POST", "/v1/wh/transactions/commit")[0].json()
    assert c.table_exists("db", "t") is True
    assert c.table_exists("db", "gone") is False
    c.drop_namespace("db")
    assert len(srv.requests("DELETE", "/v1/wh/namespaces/db")) == 1


def test_generic_request_and_get_url(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/custom", R(200, {"ok": True}))
    srv.on("GET", "/v1/wh/namespaces/db/tables/t/credentials", R(200, {"storage-credentials": []}))
    c = make(srv, clock, auth=BearerToken(TOKEN_1))
    assert c.request("GET", "/v1/{prefix}/custom") == {"ok": True}
    # A server-given refresh endpoint, relative to the catalog URI.
    assert c.get_url("v1/wh/namespaces/db/tables/t/credentials") == {"storage-credentials": []}
    assert srv.requests("GET", "/v1/wh/namespaces/db/tables/t/credentials")[0].header("Authorization") == f"Bearer {TOKEN_1}"
    # Another origin never gets our token.
    other = Scripted()
    try:
        other.on("GET", "/refresh", R(200, {"storage-credentials": []}))
        c.get_url(other.uri + "/refresh")
        assert other.requests("GET", "/refresh")[0].header("Authorization") is None
    finally:
        other.close()


def test_custom_headers_never_go_to_another_origin(srv: Scripted, clock: FakeClock) -> None:
    # `header.*` catalog properties (an API key, say) are session headers: a server-given refresh
    # endpoint on another origin must get neither them nor the token; the catalog keeps getting both.
    srv.config()
    srv.on("GET", "/v1/wh/refresh", R(200, {"storage-credentials": []}))
    c = make(srv, clock, auth=BearerToken(TOKEN_1), headers={"X-Api-Key": "k-SECRET", "X-Tenant": "t1"})
    c.get_url("v1/wh/refresh")
    own = srv.requests("GET", "/v1/wh/refresh")[0]
    assert own.header("X-Api-Key") == "k-SECRET" and own.header("X-Tenant") == "t1"
    other = Scripted()
    try:
        other.on("GET", "/refresh", R(200, {"storage-credentials": []}))
        c.get_url(other.uri + "/refresh")
        seen = other.requests("GET", "/refresh")[0]
        assert seen.header("X-Api-Key") is None and seen.header("X-Tenant") is None and seen.header("Authorization") is None
    finally:
        other.close()


def test_load_credentials_sends_refresh_token_but_never_records_it(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    path = "/v1/wh/namespaces/db/tables/t/credentials"
    creds = {"storage-credentials": [{"prefix": "s3://wh/db/t", "config": {"s3.access-key-id": "AK"}}]}
    srv.on("GET", path, R(200, creds), R(401, {"error": {"message": f"bad token {REFRESH_TOKEN}",
                                                         "type": "NotAuthorizedException", "code": 401}}))
    records: list[Exchange] = []
    c = make(srv, clock, on_exchange=records.append)
    assert c.load_credentials("db", "t", storage_refresh_token=REFRESH_TOKEN) == creds
    assert parse_qs(srv.requests("GET", path)[0].query) == {"storageRefreshToken": [REFRESH_TOKEN]}
    with pytest.raises(CatalogAuthError) as info:
        c.load_credentials("db", "t", storage_refresh_token=REFRESH_TOKEN, plan_id="p1")
    assert parse_qs(srv.requests("GET", path)[1].query) == {"storageRefreshToken": [REFRESH_TOKEN], "planId": ["p1"]}
    last = c.last_exchange
    assert last is not None and last.status == 401 and last.operation == "load_credentials"
    assert last.path == f"{path}?storageRefreshToken=%2A%2A%2A&planId=p1"
    assert records[-1] == last and last.elapsed_ms >= 0
    assert_no_secrets(info.value, last, records, c.exchanges)


# ---------------------------------------------------------------------------- errors
def test_malformed_json_body(srv: Scripted, clock: FakeClock) -> None:
    srv.on("GET", "/v1/config", R(200, "<html>proxy login</html>"))
    with pytest.raises(CatalogError, match=r"^catalog returned malformed JSON for GET /v1/config: ") as info:
        make(srv, clock).config()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("route,body,call", [
    ("/v1/config", {"defaults": [], "overrides": {}}, lambda c: c.config()),
    ("/v1/wh/namespaces", {"namespaces": "db"}, lambda c: c.list_namespaces()),
    ("/v1/wh/namespaces/db/tables/t", {"metadata-location": "x"}, lambda c: c.load_table("db", "t")),
    ("/v1/wh/namespaces/db/tables/t/credentials", {"storage-credentials": [{"prefix": 1}]},
     lambda c: c.load_credentials("db", "t")),
    ("/v1/wh/namespaces/db", ["not", "an", "object"], lambda c: c.load_namespace("db")),
])
def test_wrong_shape_is_malformed(srv: Scripted, clock: FakeClock, route: str, body: Any, call: Any) -> None:
    if route != "/v1/config":
        srv.config()
    srv.on("GET", route, R(200, body))
    with pytest.raises(CatalogError, match="catalog returned malformed JSON for GET"):
        call(make(srv, clock))


def test_unreachable_port_is_retried_then_names_the_uri(clock: FakeClock) -> None:
    port = free_port()
    policy = RetryPolicy(max_attempts=3, base_delay=0.1, jitter=False, clock=clock.now, sleep=clock.sleep)
    c = CatalogClient(f"http://user:pw-{CLIENT_SECRET}@127.0.0.1:{port}", "wh", retry=policy)
    with pytest.raises(CatalogUnavailableError) as info:
        c.config()
    msg = str(info.value)
    assert f"http://127.0.0.1:{port}" in msg and "connection refused" in msg and "after 3 attempts" in msg
    assert "check --uri" in msg and "\n" not in msg
    assert clock.sleeps == [0.1, 0.2]
    assert [e.error for e in c.exchanges] == ["connection-refused"] * 3
    assert_no_secrets(msg, repr(c))
    assert "pw-" not in msg and "user" not in msg


def test_unknown_host_is_unavailable(clock: FakeClock) -> None:
    policy = RetryPolicy(max_attempts=1, clock=clock.now, sleep=clock.sleep)
    c = CatalogClient("http://no-such-host.invalid:8181", retry=policy)
    with pytest.raises(CatalogUnavailableError, match=r"no-such-host\.invalid:8181 \(host name does not resolve\)"):
        c.config()


def test_invalid_uri_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        CatalogClient("ftp://x")
    with pytest.raises(ConfigError):
        CatalogClient("localhost:8181")


@pytest.mark.parametrize("status,body,exc,needle", [
    (401, {"error": {"message": "Bearer token is invalid", "type": "NotAuthorizedException", "code": 401}},
     CatalogAuthError, "catalog rejected the credentials (401 NotAuthorizedException: "),
    (403, {"error": {"message": "Access Denied.", "type": "ForbiddenException", "code": 403}},
     CatalogAuthError, "403 ForbiddenException: Access Denied."),
    (404, {"error": {"message": "Table does not exist: t", "type": "NoSuchTableException", "code": 404}},
     CatalogNotFoundError, "table 'db.t' not found (404 NoSuchTableException"),
    (404, {"error": {"message": "Namespace does not exist: [db]", "type": "NoSuchNamespaceException", "code": 404}},
     CatalogNotFoundError, "namespace "),
    (404, {"error": {"message": "Path not found", "type": "NotFound", "code": 404}},
     CatalogNotFoundError, "catalog has no endpoint GET /v1/wh/namespaces/db/tables/t"),
    (404, "<html>nginx</html>", CatalogNotFoundError, "catalog has no endpoint"),
    (409, {"error": {"message": "x", "type": "CommitFailedException", "code": 409}}, CatalogConflictError, "409"),
    (400, {"error": {"message": "Malformed request", "type": "BadRequestException", "code": 400}},
     CatalogError, "400 BadRequestException: Malformed request"),
    (501, {"error": {"message": "nope", "type": "UnsupportedOperationException", "code": 501}},
     CatalogUnsupportedError, "does not support"),
    (500, {"error": {"message": "boom", "type": "ServerError", "code": 500}}, CatalogUnavailableError, "500 ServerError: boom"),
])
def test_error_mapping_is_one_line_and_typed(srv: Scripted, clock: FakeClock, status: int, body: Any,
                                             exc: type, needle: str) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(status, body))
    c = make(srv, clock, auth=BearerToken(TOKEN_1))
    with pytest.raises(exc) as info:
        c.load_table("db", "t")
    msg = str(info.value)
    assert needle in msg and "\n" not in msg
    assert info.value.status == status
    assert len(srv.requests("GET", T_PATH)) == 1  # terminal: never retried
    assert_no_secrets(msg)


def test_not_found_kinds(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(404, {"error": {"message": "no such thing", "type": "NoSuchNamespaceException"}}))
    srv.on("GET", "/v1/wh/namespaces/db/tables/t", R(404, {"error": {"message": "gone", "type": "NoSuchTableException"}}))
    srv.on("GET", "/v1/wh/namespaces/db/tables/t/credentials", NOT_FOUND)
    c = make(srv, clock)
    kinds = []
    for call in (c.list_namespaces, lambda: c.load_table("db", "t"), lambda: c.load_credentials("db", "t")):
        with pytest.raises(CatalogNotFoundError) as info:
            call()
        kinds.append(info.value.kind)
    assert kinds == ["warehouse", "table", "endpoint"]
    bad = Scripted()
    try:  # /v1/config missing: the URI is wrong
        with pytest.raises(CatalogNotFoundError, match="check --uri"):
            make(bad, clock).config()
    finally:
        bad.close()


def test_server_error_text_is_redacted(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(400, {"error": {"message": f"bad request token={TOKEN_2} secret: {CLIENT_SECRET}",
                                            "type": "BadRequestException", "code": 400}}))
    with pytest.raises(CatalogError) as info:
        make(srv, clock).load_table("db", "t")
    assert "BadRequestException" in str(info.value)
    assert_no_secrets(info.value)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not available")
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def test_tls_failure_mentions_ca_bundle_and_custom_ca_works(tls_files: tuple[str, str], clock: FakeClock) -> None:
    cert, key = tls_files
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = Scripted(tls=ctx)
    try:
        server.config()
        with pytest.raises(CatalogError) as info:
            make(server, clock).config()
        assert not isinstance(info.value, CatalogUnavailableError)
        assert "TLS" in str(info.value) and "CA bundle" in str(info.value)
        assert server.uri in str(info.value)
        c = make(server, clock, verify=cert)
        c.config()
        assert c.prefix == "wh"
    finally:
        server.close()


# ---------------------------------------------------------------------------- retries
def test_retry_on_503_then_success(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(503), R(503), R(200, {"namespaces": [["db"]]}))
    c = make(srv, clock)
    assert c.list_namespaces() == [("db",)]
    assert len(srv.requests("GET", "/v1/wh/namespaces")) == 3
    assert clock.sleeps == [0.1, 0.2]
    assert [e.status for e in c.exchanges if e.operation == "list_namespaces"] == [503, 503, 200]
    assert [e.attempt for e in c.exchanges if e.operation == "list_namespaces"] == [1, 2, 3]


@pytest.mark.parametrize("status", [502, 504, 429])
def test_reads_retry_on_gateway_errors_and_429(srv: Scripted, clock: FakeClock, status: int) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(status), R(200, {"namespaces": []}))
    assert make(srv, clock).list_namespaces() == []
    assert len(srv.requests("GET", "/v1/wh/namespaces")) == 2


def test_persistent_503_gives_unavailable_with_attempt_count(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(503, {"error": {"message": "overloaded", "type": "ServiceUnavailable"}}))
    with pytest.raises(CatalogUnavailableError) as info:
        make(srv, clock, attempts=3).list_namespaces()
    assert "503 ServiceUnavailable: overloaded" in str(info.value) and "after 3 attempts" in str(info.value)
    assert len(srv.requests("GET", "/v1/wh/namespaces")) == 3


@pytest.mark.parametrize("status,exc", [(400, CatalogError), (409, CatalogConflictError), (422, CatalogError),
                                        (404, CatalogNotFoundError)])
def test_terminal_4xx_never_retried(srv: Scripted, clock: FakeClock, status: int, exc: type) -> None:
    srv.config(lifetime="PT30M")  # even with idempotency support
    srv.on("POST", T_PATH, R(status, {"error": {"message": "no", "type": "X", "code": status}}))
    with pytest.raises(exc):
        make(srv, clock).commit_table("db", "t", [], [])
    assert len(srv.requests("POST", T_PATH)) == 1
    assert clock.sleeps == []


def test_retry_after_is_honoured_and_capped(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(429, headers={"Retry-After": "7"}),
           R(503, headers={"Retry-After": "3600"}), R(200, {"namespaces": []}))
    make(srv, clock).list_namespaces()
    assert clock.sleeps == [7.0, 20.0]  # 7 s as asked; 3600 s capped at retry_after_cap


def test_retry_after_ignored_on_502(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(502, headers={"Retry-After": "9"}), R(200, {"namespaces": []}))
    make(srv, clock).list_namespaces()
    assert clock.sleeps == [0.1]


def test_total_timeout_bounds_retries(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(503, headers={"Retry-After": "12"}))
    policy = RetryPolicy(max_attempts=10, total_timeout=30.0, retry_after_cap=60.0,
                         clock=clock.now, sleep=clock.sleep)
    c = CatalogClient(srv.uri, "wh", retry=policy)
    with pytest.raises(CatalogUnavailableError):
        c.list_namespaces()
    assert clock.sleeps == [12.0, 12.0]  # a third wait would cross 30 s
    assert len(srv.requests("GET", "/v1/wh/namespaces")) == 3


def test_read_timeout_on_a_read_is_retried(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(action="hang"), R(200, {"namespaces": []}))
    c = make(srv, clock, timeout=(2.0, 0.05))
    assert c.list_namespaces() == []
    assert [e.error for e in c.exchanges if e.operation == "list_namespaces"] == ["read-timeout", None]


# ---------------------------------------------------------------------------- idempotency
def test_no_idempotency_key_unless_advertised(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    c = make(srv, clock)
    c.commit_table("db", "t", [], [])
    assert srv.requests("POST", T_PATH)[0].header("Idempotency-Key") is None
    assert c.last_idempotency_key is None


def test_idempotency_key_on_every_mutation_when_advertised(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT30M")
    srv.on("POST", "/v1/wh/namespaces", R(200, {"namespace": ["db"], "properties": {}}))
    srv.on("POST", "/v1/wh/namespaces/db/tables", R(200, TABLE_RESULT))
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    srv.on("DELETE", T_PATH, R(204))
    srv.on("POST", "/v1/wh/tables/rename", R(204))
    srv.on("POST", "/v1/wh/namespaces/db/register", R(200, TABLE_RESULT))
    srv.on("POST", "/v1/wh/transactions/commit", R(204))
    srv.on("DELETE", "/v1/wh/namespaces/db", R(204))
    srv.on("GET", T_PATH, R(200, TABLE_RESULT))
    c = make(srv, clock)
    c.create_namespace("db")
    c.create_table("db", {"name": "t", "schema": {}}, stage_create=True)
    c.create_table("db", {"name": "t", "schema": {}})
    c.commit_table("db", "t", [], [])
    c.commit_transaction([])
    c.rename_table("db", "t", "db", "t2")
    c.register_table("db", "t", "s3://x")
    c.drop_table("db", "t")
    c.drop_namespace("db")
    c.load_table("db", "t")
    mutations = [s for s in srv.seen if s.method in ("POST", "DELETE")]
    keys = [s.header("Idempotency-Key") for s in mutations]
    assert len(mutations) == 9 and all(k and UUID7_RE.match(k) for k in keys)
    assert len(set(keys)) == 9  # a new key per operation
    assert keys == sorted(keys)  # UUIDv7: minted in order
    assert c.last_idempotency_key == keys[-1]
    assert all(s.header("Idempotency-Key") is None for s in srv.seen if s.method == "GET")


def test_idempotency_forced_and_disabled(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    make(srv, clock, idempotency=True).commit_table("db", "t", [], [])
    assert UUID7_RE.match(srv.requests("POST", T_PATH)[-1].header("Idempotency-Key") or "")
    srv.config(lifetime="PT30M")
    make(srv, clock, idempotency=False).commit_table("db", "t", [], [])
    assert srv.requests("POST", T_PATH)[-1].header("Idempotency-Key") is None


def test_explicit_key_is_used(srv: Scripted, clock: FakeClock) -> None:
    srv.config()  # not advertised: an explicit key is still sent
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    c = make(srv, clock)
    c.commit_table("db", "t", [], [], idempotency_key="0190b1b2-0000-7000-8000-000000000001")
    assert srv.requests("POST", T_PATH)[0].header("Idempotency-Key") == "0190b1b2-0000-7000-8000-000000000001"
    assert c.last_idempotency_key == "0190b1b2-0000-7000-8000-000000000001"


def test_same_key_across_retries_of_one_operation(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT30M")
    srv.on("POST", T_PATH, R(503), R(504), R(action="drop"), R(200, COMMIT_RESULT),  # op 1
           R(200, COMMIT_RESULT))  # op 2
    c = make(srv, clock, attempts=5)
    c.commit_table("db", "t", [], [])
    first = c.last_idempotency_key
    c.commit_table("db", "t", [], [])
    keys = [s.header("Idempotency-Key") for s in srv.requests("POST", T_PATH)]
    assert keys[:4] == [first] * 4
    assert keys[4] == c.last_idempotency_key and keys[4] != first
    assert [e.idempotency_key for e in c.exchanges if e.operation == "commit_table"][:4] == [first] * 4


def test_idempotent_mutation_out_of_retries_is_ambiguous_with_key(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT30M")
    srv.on("POST", T_PATH, R(504))
    c = make(srv, clock, attempts=3)
    with pytest.raises(AmbiguousMutationError) as info:
        c.commit_table("db", "t", [], [])
    err = info.value
    assert err.idempotency_key == c.last_idempotency_key and err.operation == "commit_table"
    assert err.idempotency_key in str(err) and len(srv.requests("POST", T_PATH)) == 3


def test_retries_stop_before_the_key_lifetime_runs_out(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT10S")
    srv.on("POST", T_PATH, R(503, headers={"Retry-After": "5"}))
    policy = RetryPolicy(max_attempts=10, total_timeout=120, clock=clock.now, sleep=clock.sleep)
    with pytest.raises(CatalogUnavailableError):
        CatalogClient(srv.uri, "wh", retry=policy).commit_table("db", "t", [], [])
    assert len(srv.requests("POST", T_PATH)) == 2  # a 3rd attempt at 10 s would be ≥ 90 % of PT10S


@pytest.mark.parametrize("script,cause", [
    ([R(502)], "HTTP 502"),
    ([R(504)], "HTTP 504"),
    ([R(500, {"error": {"message": "db down", "type": "ServerError"}})], "HTTP 500"),
    ([R(action="drop")], "connection-reset"),
])
def test_ambiguous_mutation_without_idempotency_is_not_retried(srv: Scripted, clock: FakeClock,
                                                               script: list[R], cause: str) -> None:
    srv.config()
    srv.on("POST", T_PATH, *script, R(200, COMMIT_RESULT))
    c = make(srv, clock)
    with pytest.raises(AmbiguousMutationError) as info:
        c.commit_table("db", "t", [{"type": "assert-create"}], [])
    err = info.value
    assert isinstance(err, CatalogUnavailableError)
    assert err.operation == "commit_table" and err.method == "POST" and err.path == T_PATH
    assert err.idempotency_key is None and cause in (err.cause or "")
    assert "reconcile" in str(err) and "\n" not in str(err)
    assert len(srv.requests("POST", T_PATH)) == 1


def test_read_timeout_on_mutation_without_idempotency_is_ambiguous(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("DELETE", T_PATH, R(action="hang"), R(204))
    c = make(srv, clock, timeout=(2.0, 0.05))
    with pytest.raises(AmbiguousMutationError) as info:
        c.drop_table("db", "t")
    assert info.value.operation == "drop_table" and info.value.cause == "read-timeout"
    assert len(srv.requests("DELETE", T_PATH)) == 1


def test_read_timeout_on_mutation_with_idempotency_is_retried(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT1H")
    srv.on("POST", T_PATH, R(action="hang"), R(200, COMMIT_RESULT))
    c = make(srv, clock, timeout=(2.0, 0.05))
    c.commit_table("db", "t", [], [])
    keys = {s.header("Idempotency-Key") for s in srv.requests("POST", T_PATH)}
    assert len(srv.requests("POST", T_PATH)) == 2 and keys == {c.last_idempotency_key}


def test_safe_statuses_retry_mutations_without_idempotency(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", T_PATH, R(503), R(429, headers={"Retry-After": "1"}), R(200, COMMIT_RESULT))
    make(srv, clock).commit_table("db", "t", [], [])
    assert len(srv.requests("POST", T_PATH)) == 3
    assert all(s.header("Idempotency-Key") is None for s in srv.requests("POST", T_PATH))


def test_connection_refused_mutation_is_retried_not_ambiguous(clock: FakeClock) -> None:
    port = free_port()
    policy = RetryPolicy(max_attempts=3, clock=clock.now, sleep=clock.sleep)
    c = CatalogClient(f"http://127.0.0.1:{port}", retry=policy)
    c.prefix, c._config_loaded = "wh", True  # config known; the server is gone now
    with pytest.raises(CatalogUnavailableError) as info:
        c.commit_table("db", "t", [], [])
    assert not isinstance(info.value, AmbiguousMutationError)
    assert len(c.exchanges) == 3


def test_conflict_after_maybe_applied_attempt_is_ambiguous(srv: Scripted, clock: FakeClock) -> None:
    srv.config(lifetime="PT30M")
    srv.on("POST", T_PATH, R(504), R(409, {"error": {"message": "table exists", "type": "CommitFailedException"}}))
    with pytest.raises(AmbiguousMutationError):
        make(srv, clock).commit_table("db", "t", [{"type": "assert-create"}], [])


# ---------------------------------------------------------------------------- auth
def test_auth_header_formats(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    make(srv, clock, auth=BearerToken(TOKEN_1)).config()
    make(srv, clock, auth=BasicAuth("alice", CLIENT_SECRET)).config()
    make(srv, clock, auth=NoAuth()).config()
    make(srv, clock).config()
    got = [s.header("Authorization") for s in srv.requests("GET", "/v1/config")]
    import base64
    assert got[0] == f"Bearer {TOKEN_1}"
    assert got[1] == "Basic " + base64.b64encode(f"alice:{CLIENT_SECRET}".encode()).decode()
    assert got[2] is None and got[3] is None


def token_response(token: str, expires_in: int | None = 3600) -> R:
    body: dict[str, Any] = {"access_token": token, "token_type": "bearer", "issued_token_type": "x"}
    if expires_in is not None:
        body["expires_in"] = expires_in
    return R(200, body)


def test_oauth2_fetch_and_cache(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/oauth/tokens", token_response(TOKEN_1))
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": []}))
    auth = OAuth2ClientCredentials("client-a", CLIENT_SECRET, clock=clock.now)  # default scope: Iceberg's "catalog"
    c = make(srv, clock, auth=auth)
    for _ in range(3):
        c.list_namespaces()
    fetches = srv.requests("POST", "/v1/oauth/tokens")
    assert len(fetches) == 1 and auth.fetch_count == 1
    form = parse_qs(fetches[0].body.decode())
    assert form == {"grant_type": ["client_credentials"], "client_id": ["client-a"],
                    "client_secret": [CLIENT_SECRET], "scope": ["catalog"]}
    assert fetches[0].header("Authorization") is None
    assert all(s.header("Authorization") == f"Bearer {TOKEN_1}" for s in srv.requests("GET"))
    assert auth.token_uri == srv.uri + "/v1/oauth/tokens"
    assert any(e.operation == "oauth2 token" and e.status == 200 for e in c.exchanges)


def test_oauth2_refreshes_before_expiry(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/oauth/tokens", token_response(TOKEN_1, 100), token_response(TOKEN_2, 100))
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": []}))
    auth = OAuth2ClientCredentials("c", CLIENT_SECRET, clock=clock.now)  # margin: min(300, 100/2) = 50 s
    c = make(srv, clock, auth=auth)
    c.list_namespaces()
    clock.t += 49
    c.list_namespaces()
    clock.t += 2
    c.list_namespaces()
    assert [s.header("Authorization") for s in srv.requests("GET", "/v1/wh/namespaces")] == [
        f"Bearer {TOKEN_1}", f"Bearer {TOKEN_1}", f"Bearer {TOKEN_2}"]
    assert auth.fetch_count == 2


def test_oauth2_failed_early_refresh_keeps_valid_token(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/oauth/tokens", token_response(TOKEN_1, 100),
           R(401, {"error": "invalid_client", "error_description": "revoked"}))
    srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": []}))
    auth = OAuth2ClientCredentials("c", CLIENT_SECRET, clock=clock.now)
    c = make(srv, clock, auth=auth)
    c.list_namespaces()
    clock.t += 60  # inside the refresh window, token still valid
    c.list_namespaces()
    assert srv.requests("GET", "/v1/wh/namespaces")[-1].header("Authorization") == f"Bearer {TOKEN_1}"
    clock.t += 50  # now really expired
    with pytest.raises(CatalogAuthError, match="rejected the client credentials") as info:
        c.list_namespaces()
    assert_no_secrets(info.value)


def test_oauth2_refetches_once_after_401(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/oauth/tokens", token_response(TOKEN_1), token_response(TOKEN_2))
    srv.on("GET", "/v1/wh/namespaces", R(401, {"error": {"message": "expired", "type": "NotAuthorizedException"}}),
           R(200, {"namespaces": []}))
    auth = OAuth2ClientCredentials("c", CLIENT_SECRET, clock=clock.now)
    assert make(srv, clock, auth=auth).list_namespaces() == []
    assert [s.header("Authorization") for s in srv.requests("GET", "/v1/wh/namespaces")] == [
        f"Bearer {TOKEN_1}", f"Bearer {TOKEN_2}"]
    # A second 401 right after a fresh token is final, not a loop.
    srv.on("GET", "/v1/wh/namespaces", R(401, {"error": {"message": "no", "type": "NotAuthorizedException"}}))
    with pytest.raises(CatalogAuthError):
        make(srv, clock, auth=auth).list_namespaces()


def test_oauth2_token_endpoint_errors(srv: Scripted, clock: FakeClock) -> None:
    srv.config()
    srv.on("POST", "/v1/oauth/tokens", R(200, {"token_type": "bearer"}))
    with pytest.raises(CatalogError, match="malformed JSON for POST"):
        make(srv, clock, auth=OAuth2ClientCredentials("c", CLIENT_SECRET)).list_namespaces()
    srv.on("POST", "/custom/token", R(400, {"error": "invalid_scope", "error_description": "bad scope"}))
    auth = auth_from_conf({"credential": f"c:{CLIENT_SECRET}", "oauth2-server-uri": "custom/token"})
    with pytest.raises(CatalogAuthError, match=r"400 invalid_scope: bad scope") as info:
        make(srv, clock, auth=auth).list_namespaces()
    assert_no_secrets(info.value)


def test_oauth2_token_is_single_flight_across_threads() -> None:
    calls = []
    gate = threading.Event()

    class Resp:
        status_code = 200

        def json(self) -> dict[str, Any]:
            return {"access_token": TOKEN_1, "token_type": "bearer", "expires_in": 3600}

    def transport(method: str, url: str, *, data: Any, operation: str) -> Any:
        calls.append(url)
        gate.wait(1)
        return Resp()

    auth = OAuth2ClientCredentials("c", CLIENT_SECRET)
    auth.bind("http://catalog.example", transport)
    out: list[str] = []
    threads = [threading.Thread(target=lambda: out.append(auth.token())) for _ in range(16)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join()
    assert out == [TOKEN_1] * 16 and len(calls) == 1
    assert calls[0] == "http://catalog.example/v1/oauth/tokens"


def test_sigv4_headers_present_and_well_formed(srv: Scripted, clock: FakeClock) -> None:
    from botocore.credentials import Credentials

    srv.config()
    srv.on("POST", "/v1/wh/namespaces", R(200, {"namespace": ["db"], "properties": {}}))
    auth = SigV4("eu-west-1", "s3", credentials=Credentials("AKIDEXAMPLE", AWS_SECRET, "session-tok"))
    c = make(srv, clock, auth=auth, idempotency=True)
    c.create_namespace("db")
    seen = srv.requests("POST", "/v1/wh/namespaces")[0]
    authz = seen.header("Authorization") or ""
    m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/(\d{8})/eu-west-1/s3/aws4_request, "
                     r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})", authz)
    assert m, authz
    signed = m.group(2).split(";")
    for h in ("host", "x-amz-date", "x-amz-content-sha256", "content-type", "idempotency-key",
              "x-amz-security-token"):
        assert h in signed
    assert re.fullmatch(r"\d{8}T\d{6}Z", seen.header("X-Amz-Date") or "")
    assert (seen.header("X-Amz-Date") or "").startswith(m.group(1))
    assert seen.header("X-Amz-Content-SHA256") == hashlib.sha256(seen.body).hexdigest()
    assert seen.header("X-Amz-Security-Token") == "session-tok"
    get = srv.requests("GET", "/v1/config")[0]
    assert get.header("X-Amz-Content-SHA256") == hashlib.sha256(b"").hexdigest()
    assert_no_secrets(repr(auth), str(auth), auth.describe())


def test_auth_from_conf() -> None:
    assert isinstance(auth_from_conf({}), NoAuth)
    assert isinstance(auth_from_conf({"token": TOKEN_1}), BearerToken)
    o = auth_from_conf({"credential": f"id:{CLIENT_SECRET}", "scope": "PRINCIPAL_ROLE:x",
                        "oauth2-server-uri": "https://idp/token"})
    assert isinstance(o, OAuth2ClientCredentials) and o.scope == "PRINCIPAL_ROLE:x" and o.token_uri == "https://idp/token"
    bare = auth_from_conf({"credential": CLIENT_SECRET})
    assert isinstance(bare, OAuth2ClientCredentials) and bare._client_id is None
    assert auth_from_conf({"credential": "a:b"}).scope == "catalog"  # Iceberg's default; profiles set their own
    s = auth_from_conf({"rest.sigv4-enabled": "true", "rest.signing-region": "us-east-1",
                        "rest.signing-name": "s3tables", "rest.access-key-id": "AK",
                        "rest.secret-access-key": AWS_SECRET})
    assert isinstance(s, SigV4) and s.signing_name == "s3tables" and s.region == "us-east-1"
    assert auth_from_conf({"rest.auth.type": "sigv4", "client.region": "eu-north-1"}).signing_name == "execute-api"
    assert isinstance(auth_from_conf({"rest.auth.type": "none", "token": TOKEN_1}), NoAuth)
    assert isinstance(auth_from_conf({"rest.auth.type": "basic", "rest.auth.basic.username": "u",
                                      "rest.auth.basic.password": "p"}), BasicAuth)
    for bad in ({"rest.auth.type": "kerberos"}, {"rest.auth.type": "sigv4"}, {"rest.auth.type": "oauth2"},
                {"rest.sigv4-enabled": "true", "rest.signing-region": "r", "rest.access-key-id": "AK"}):
        with pytest.raises(ConfigError) as info:
            auth_from_conf(bad)
        assert "\n" not in str(info.value)


def test_repr_and_str_never_show_secrets(srv: Scripted, clock: FakeClock) -> None:
    from botocore.credentials import Credentials

    auths = [
        BearerToken(TOKEN_1),
        BasicAuth("user", CLIENT_SECRET),
        OAuth2ClientCredentials("client-id", CLIENT_SECRET),
        SigV4("us-east-1", "s3", credentials=Credentials("AK", AWS_SECRET, TOKEN_2)),
        auth_from_conf({"credential": f"id:{CLIENT_SECRET}"}),
    ]
    for a in auths:
        c = CatalogClient(srv.uri, "wh", auth=a)
        assert_no_secrets(repr(a), str(a), a.describe(), repr(c), str(c))
    o = OAuth2ClientCredentials("client-id", CLIENT_SECRET)
    o.bind(srv.uri)
    srv.on("POST", "/v1/oauth/tokens", token_response(TOKEN_1))
    o.token()
    assert_no_secrets(repr(o), str(o), o.describe(), vars(o).get("scope"))


# ---------------------------------------------------------------------------- real SeaweedFS
@pytest.fixture
def lake(lakehouse: Any) -> Any:
    """Connection facts of the `lakehouse` fixture: either the object itself (iceberg_uri,
    warehouse, access_key, secret_key) or, for local.Lakehouse, its `.info`."""
    return getattr(lakehouse, "info", None) or lakehouse


SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}


def sw_client(lake: Any, **kw: Any) -> CatalogClient:
    auth = kw.pop("auth", None) or OAuth2ClientCredentials(lake.access_key, lake.secret_key)
    return CatalogClient(lake.iceberg_uri, kw.pop("warehouse", lake.warehouse), auth=auth,
                         retry=RetryPolicy(max_attempts=2, base_delay=0.01), **kw)


@pytest.fixture
def sw_namespace(lake: Any) -> Iterator[str]:
    ns = "cc_" + uuid.uuid4().hex[:10]
    c = sw_client(lake)
    c.create_namespace(ns)
    yield ns
    try:
        for t in c.list_tables(ns):
            c.drop_table(ns, t.name, purge=True)
        c.drop_namespace(ns)
    finally:
        c.close()


def test_seaweedfs_oauth2_config_and_listing(lake: Any) -> None:
    c = sw_client(lake)
    c.config()
    assert c.prefix == lake.warehouse
    assert c.idempotency_key_lifetime is None and not c.idempotency_enabled  # SeaweedFS: not advertised
    assert isinstance(c.list_namespaces(), list)
    assert isinstance(c.list_namespaces(), list)
    assert c.auth.fetch_count == 1  # type: ignore[attr-defined]


def test_seaweedfs_bad_client_secret_is_one_line_401(lake: Any) -> None:
    wrong = "wrong-" + lake.secret_key + "-x"
    c = sw_client(lake, auth=OAuth2ClientCredentials(lake.access_key, wrong))
    with pytest.raises(CatalogAuthError) as info:
        c.list_namespaces()
    msg = str(info.value)
    assert info.value.status == 401 and "\n" not in msg
    assert "401 invalid_client" in msg and "check --credential" in msg
    assert wrong not in msg and lake.secret_key not in msg and lake.secret_key not in repr(c)


def test_seaweedfs_bad_bearer_token_is_one_line_401(lake: Any) -> None:
    c = sw_client(lake, auth=BearerToken(TOKEN_1))
    with pytest.raises(CatalogAuthError, match=r"catalog rejected the credentials \(401 NotAuthorizedException") as info:
        c.list_namespaces()
    assert_no_secrets(info.value)


def test_seaweedfs_wrong_warehouse_is_not_found(lake: Any) -> None:
    c = sw_client(lake, warehouse="no-such-bucket-" + uuid.uuid4().hex[:6])
    with pytest.raises(CatalogNotFoundError) as info:
        c.list_namespaces()
    assert info.value.kind == "warehouse" and "check --warehouse" in str(info.value)
    assert "\n" not in str(info.value)


def test_seaweedfs_sigv4_signs_reads_and_bodies(lake: Any) -> None:
    auth = auth_from_conf({"rest.sigv4-enabled": "true", "rest.signing-name": "s3",
                           "rest.signing-region": "us-east-1", "rest.access-key-id": lake.access_key,
                           "rest.secret-access-key": lake.secret_key})
    c = sw_client(lake, auth=auth)
    ns = "cc_sig_" + uuid.uuid4().hex[:8]
    c.create_namespace(ns)  # a POST with a body: the payload hash must verify
    try:
        assert (ns,) in c.list_namespaces()
        assert c.namespace_exists(ns)
    finally:
        c.drop_namespace(ns)
    assert not c.namespace_exists(ns)


def test_seaweedfs_stage_create_vends_credentials_and_commit(lake: Any, sw_namespace: str) -> None:
    seen: list[Exchange] = []
    c = sw_client(lake, on_exchange=seen.append)
    staged = c.create_table(sw_namespace, {"name": "t", "schema": SCHEMA}, stage_create=True)
    creds = staged["storage-credentials"]
    assert creds and creds[0]["prefix"].endswith(f"/{sw_namespace}/t")
    cfg = creds[0]["config"]
    for k in ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "s3.session-token-expires-at-ms"):
        assert cfg.get(k)
    assert c.last_idempotency_key is None  # not advertised, not sent
    assert not c.table_exists(sw_namespace, "t")  # staged: invisible until commit
    md = staged["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": md["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": md["format-version"]},
        {"action": "add-schema", "schema": md["schemas"][0], "last-column-id": md["last-column-id"]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": md["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": md["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": md["location"]},
    ]
    out = c.commit_table(sw_namespace, "t", [{"type": "assert-create"}], updates)
    assert out["metadata"]["table-uuid"] == md["table-uuid"]
    assert c.table_exists(sw_namespace, "t")
    with pytest.raises(CatalogConflictError):  # replay: SeaweedFS has no idempotency
        c.commit_table(sw_namespace, "t", [{"type": "assert-create"}], updates)
    loaded = c.load_table(sw_namespace, "t")
    assert loaded["storage-credentials"][0]["config"]["s3.access-key-id"]
    # Vended secrets never reach evidence.
    evidence = " ".join(str(e) for e in seen)
    assert cfg["s3.secret-access-key"] not in evidence and cfg["s3.session-token"] not in evidence
    assert {e.status for e in seen if e.operation == "stage_create"} == {200}


def test_seaweedfs_load_credentials_endpoint_is_missing(lake: Any, sw_namespace: str) -> None:
    c = sw_client(lake)
    c.create_table(sw_namespace, {"name": "t", "schema": SCHEMA})
    with pytest.raises(CatalogNotFoundError) as info:
        c.load_credentials(sw_namespace, "t", storage_refresh_token=REFRESH_TOKEN)
    assert info.value.status == 404 and info.value.kind == "endpoint"
    assert "credentials" in str(info.value) and REFRESH_TOKEN not in str(info.value)
    assert c.last_exchange is not None and REFRESH_TOKEN not in c.last_exchange.path


def test_seaweedfs_missing_table_and_namespace(lake: Any, sw_namespace: str) -> None:
    c = sw_client(lake)
    with pytest.raises(CatalogNotFoundError) as info:
        c.load_table(sw_namespace, "absent")
    assert info.value.kind == "table"
    with pytest.raises(CatalogNotFoundError) as info:
        c.load_namespace("cc_absent_" + uuid.uuid4().hex[:6])
    assert info.value.kind == "namespace"


def test_auth_manager_shape_both_ways() -> None:
    """Our strategies answer PyIceberg's AuthManager question (auth_header), and any PyIceberg
    AuthManager drives our client (PyIcebergAuth): one auth stack for both."""
    from pyiceberg.catalog.rest.auth import BasicAuthManager, NoopAuthManager

    assert BearerToken(TOKEN_1).auth_header() == f"Bearer {TOKEN_1}"
    assert NoAuth().auth_header() is None
    assert BasicAuth("u", "p").auth_header() == BasicAuthManager("u", "p").auth_header()
    theirs = PyIcebergAuth(BasicAuthManager("u", "p"))
    assert theirs.auth_header() == "Basic dTpw" and "dTpw" not in repr(theirs) + theirs.describe()
    assert PyIcebergAuth(NoopAuthManager()).auth_header() is None
    refreshed = []
    assert PyIcebergAuth(NoopAuthManager(), on_401=lambda: refreshed.append(1)).invalidate() and refreshed == [1]
    assert not PyIcebergAuth(NoopAuthManager()).invalidate()
