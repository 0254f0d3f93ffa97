"""CatalogClient, the one catalog client: bounded calls, evidence, one-line errors, trust boundaries.

Two kinds of server:
* a scripted HTTP server on 127.0.0.1 (http.server in a thread) whose responses each test
  lays out, and which records every request it receives;
* a real SeaweedFS from the `lakehouse` fixture (Iceberg REST catalog with vended credentials).

Retries use urllib3's backoff (0.2 s base), so a retrying test waits well under a second.
"""


from __future__ import annotations

import logging
import re
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from pyspark_catalog_ext.catalog.rest import CatalogClient, PurgeRequiredError, open_catalog
from pyspark_catalog_ext.catalog.transport import read_retry
from pyspark_catalog_ext.errors import (
    CatalogAuthError,
    CatalogConflictError,
    CatalogError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    CatalogUnsupportedError,
    ConfigError,
    UntrustedOriginError,
)
from pyspark_catalog_ext.ports import free_port
from tests.servers.scripted_catalog import T_PATH, TOKEN_1, R, Scripted, make

CLIENT_SECRET = "cs-Zq9!secretvalue-77f1"
TOKEN_2 = "tok2-CCCCsecretDDDD-0002"
REFRESH_TOKEN = "srt-EEEEsecretFFFF-0003"
ALL_SECRETS = (CLIENT_SECRET, TOKEN_1, TOKEN_2, REFRESH_TOKEN)
UUID7_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture
def srv() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.close()


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


# ---------------------------------------------------------------------------- config and paths
@pytest.mark.parametrize("where", ["top", "overrides"])
def test_config_gives_prefix_endpoints_and_key_lifetime(srv: Scripted, where: str) -> None:
    # Lakekeeper <= 0.13 advertises the lifetime inside overrides, in weeks (lakekeeper#1952).
    if where == "top":
        srv.config(lifetime="PT30M", endpoints=["GET /v1/{prefix}/namespaces"])
    else:
        srv.config(endpoints=["GET /v1/{prefix}/namespaces"], **{"idempotency-key-lifetime": "P1W"})
    c = make(srv)
    assert c.prefix == "wh"
    assert c.endpoints == ["GET /v1/{prefix}/namespaces"]
    assert c.supports_endpoint("GET  /v1/{prefix}/namespaces") is True
    assert c.supports_endpoint("GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials") is False
    assert c.idempotency_key_lifetime_s == (1800.0 if where == "top" else 604800.0)
    assert c.sends_keys()


def test_no_endpoint_list_means_unknown(srv: Scripted) -> None:
    srv.config()
    c = make(srv)
    assert c.endpoints is None and c.supports_endpoint("GET /v1/{prefix}/namespaces") is None
    assert c.idempotency_key_lifetime_s is None and not c.sends_keys()


def test_a_config_uri_on_another_origin_is_not_followed(srv: Scripted, caplog: pytest.LogCaptureFixture) -> None:
    """PyIceberg follows a `uri` override; ours would hand the token to another host."""
    other = Scripted()
    try:
        other.config()
        srv.config(uri=other.uri)
        srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": [["a"]]}))
        with caplog.at_level(logging.WARNING):
            c = make(srv)
            assert c.namespaces() == [("a",)]
        assert not other.seen, "a request (with our token) went to the host the config named"
        assert "another uri" in caplog.text
    finally:
        other.close()


def test_namespace_and_table_encoding_on_the_wire(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces/a%1Fb/tables/x%2Fy", R(200, TABLE_RESULT))
    c = make(srv)
    assert c.load_table_json(("a", "b", "x/y"))["metadata"]["table-uuid"] == "u-1"
    with pytest.raises(ConfigError, match="namespace.table"):
        c.load_table_json(("t",))


def test_pagination_is_followed(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", "/v1/wh/namespaces/db/tables",
           R(200, {"identifiers": [{"namespace": ["db"], "name": "t1"}], "next-page-token": "p2"}),
           R(200, {"identifiers": [{"namespace": ["db"], "name": "t2"}]}))
    assert make(srv).tables("db") == [("db", "t1"), ("db", "t2")]
    assert [s.query for s in srv.requests("GET", "/v1/wh/namespaces/db/tables")] == ["", "pageToken=p2"]


# ---------------------------------------------------------------------------- bounded calls
def test_reads_are_retried_on_503_and_429_then_succeed(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(503), R(429, headers={"Retry-After": "0"}), R(200, TABLE_RESULT))
    seen: list = []
    c = make(srv, on_exchange=seen.append)
    assert c.load_table_json(("db", "t"))["metadata-location"].endswith("v1.metadata.json")
    assert len(srv.requests("GET", T_PATH)) == 3
    assert seen[-1].operation == "load_table" and seen[-1].status == 200 and seen[-1].attempt == 3


def test_persistent_503_is_one_line_with_the_attempts(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(503, {"error": {"message": "busy", "type": "ServiceUnavailable", "code": 503}}))
    with pytest.raises(CatalogUnavailableError) as err:
        make(srv, retries=2).load_table_json(("db", "t"))
    assert "\n" not in str(err.value) and "3 attempts" in str(err.value) and "busy" in str(err.value)
    assert len(srv.requests("GET", T_PATH)) == 3


def test_terminal_4xx_is_never_retried(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(404, {"error": {"message": "Table does not exist: t", "type": "NoSuchTableException",
                                            "code": 404}}, headers={"Content-Type": "application/json"}))
    with pytest.raises(CatalogNotFoundError) as err:
        make(srv).load_table_json(("db", "t"))
    assert err.value.kind == "table" and "check the table name" in str(err.value)
    assert len(srv.requests("GET", T_PATH)) == 1


def test_retry_after_is_capped() -> None:
    class Answer:
        headers = {"Retry-After": "3600"}

        def getheader(self, name: str) -> str | None:
            return self.headers.get(name)

    assert read_retry().get_retry_after(Answer()) == 10.0


@pytest.mark.parametrize("answer", [R(action="drop"), R(503), R(502)])
def test_a_mutation_is_never_repeated_blindly(srv: Scripted, answer: R) -> None:
    """A POST whose answer is lost (or a 5xx) may have been applied: one request, and the error says so."""
    srv.config()
    srv.on("POST", T_PATH, answer)
    c = make(srv)
    with pytest.raises(CatalogError) as err:
        c.commit_table_json(("db", "t"), [], [{"action": "set-properties", "updates": {"a": "b"}}])
    assert len(srv.requests("POST", T_PATH)) == 1
    if answer.action == "drop":
        assert "may or may not have been applied" in str(err.value)


def test_a_hung_server_times_out(srv: Scripted) -> None:
    srv.config()
    srv.on("GET", T_PATH, R(action="hang"))
    with pytest.raises(CatalogUnavailableError, match="read timed out|connection reset"):
        make(srv, timeout=(1.0, 0.3), retries=0).load_table_json(("db", "t"))


def test_unreachable_port_names_the_uri() -> None:
    port = free_port()
    with pytest.raises(CatalogUnavailableError) as err:
        open_catalog({"uri": f"http://127.0.0.1:{port}", "token": TOKEN_1}, retries=1)
    assert f"127.0.0.1:{port}" in str(err.value) and "connection refused" in str(err.value)


@pytest.mark.parametrize("uri", ["", "ftp://x", "http://", "not a url"])
def test_invalid_uri_is_a_config_error(uri: str) -> None:
    with pytest.raises(ConfigError):
        open_catalog({"uri": uri or "x", "token": TOKEN_1} if uri else {"token": TOKEN_1})


# ---------------------------------------------------------------------------- idempotency keys
@pytest.mark.parametrize("lifetime,mode,sent", [("PT5M", None, True), (None, None, False), (None, "always", True),
                                                ("PT5M", "never", False)])
def test_idempotency_keys_on_mutations(srv: Scripted, lifetime: str | None, mode: str | None, sent: bool) -> None:
    srv.config(lifetime=lifetime)
    srv.on("POST", "/v1/wh/namespaces", R(200, {"namespace": ["n"], "properties": {}}))
    props = {"catalog-ext.commit.idempotency": mode} if mode else {}
    c = make(srv, **props)
    c.make_namespace("n")
    key = srv.requests("POST", "/v1/wh/namespaces")[0].header("Idempotency-Key")
    assert (key is not None) == sent
    if sent:
        assert UUID7_RE.match(key) and c.last_idempotency_key == key


def test_an_explicit_key_is_sent_as_given(srv: Scripted) -> None:
    srv.config(lifetime="PT5M")
    srv.on("POST", T_PATH, R(200, COMMIT_RESULT))
    make(srv).commit_table_json(("db", "t"), [], [], idempotency_key="my-key")
    assert srv.requests("POST", T_PATH)[0].header("Idempotency-Key") == "my-key"


# ---------------------------------------------------------------------------- errors and secrets
@pytest.mark.parametrize("status,kind", [(401, CatalogAuthError), (403, CatalogAuthError), (405, CatalogUnsupportedError),
                                         (409, CatalogConflictError), (422, CatalogError), (418, CatalogError)])
def test_error_mapping_is_one_line_and_typed(srv: Scripted, status: int, kind: type) -> None:
    srv.config()
    srv.on("POST", T_PATH, R(status, {"error": {"message": f"no, {TOKEN_1}", "type": "Nope", "code": status}}))
    with pytest.raises(kind) as err:
        make(srv).commit_table_json(("db", "t"), [], [])
    text = str(err.value)
    assert "\n" not in text and str(status) in text and err.value.status == status
    assert_no_secrets(text)


def test_a_drop_refused_without_purge_is_one_line_naming_purge(srv: Scripted) -> None:
    # S3 Tables drops a table only with its data: a plain DELETE answers 400, purgeRequested=true drops it.
    srv.config()
    srv.on("DELETE", T_PATH, R(400, {"error": {"message": "a table can only be dropped with purgeRequested=true",
                                               "type": "BadRequestException", "code": 400}}))
    c = make(srv)
    with pytest.raises(PurgeRequiredError) as err:
        c.remove_table(("db", "t"))
    text = str(err.value)
    assert "\n" not in text and "purge_table()" in text and "DROP TABLE ... PURGE" in text and "db.t" in text, text
    assert isinstance(err.value, CatalogUnsupportedError)
    srv.on("DELETE", T_PATH, R(204))
    c.remove_table(("db", "t"), purge=True)
    deletes = srv.requests("DELETE", T_PATH)
    assert ["purgerequested=true" in d.query.lower() for d in deletes] == [False, True], [d.query for d in deletes]
    srv.on("DELETE", T_PATH, R(400, {"error": {"message": "bad", "type": "BadRequestException", "code": 400}}))
    with pytest.raises(CatalogError) as err:  # a purge drop refused is the catalog's own error, not ours
        c.remove_table(("db", "t"), purge=True)
    assert not isinstance(err.value, PurgeRequiredError)


def test_the_refresh_token_is_sent_but_never_recorded(srv: Scripted) -> None:
    srv.config()
    creds = {"storage-credentials": [{"prefix": "s3://wh/db/t", "config": {"s3.access-key-id": "AK"}}]}
    srv.on("GET", T_PATH + "/credentials", R(200, creds))
    seen: list = []
    c = make(srv, on_exchange=seen.append)
    assert c.load_credentials_json(("db", "t"), storage_refresh_token=REFRESH_TOKEN) == creds
    assert REFRESH_TOKEN in srv.requests("GET", T_PATH + "/credentials")[0].query
    assert seen[-1].operation == "load_credentials" and seen[-1].path.endswith("storageRefreshToken=***")
    assert_no_secrets(*[e.as_dict() for e in c.exchanges])


def test_custom_headers_and_auth_go_only_to_the_catalogs_origin(srv: Scripted) -> None:
    """A server-given URL (refresh endpoint) on another origin is refused before any request: sent
    with credentials it would leak them, sent without them it is a blind SSRF."""
    other = Scripted()
    try:
        srv.config()
        body = {"storage-credentials": []}
        srv.on("GET", "/refresh", R(200, body))
        other.on("GET", "/refresh", R(200, body))
        c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
        c.get_url("/refresh")
        own = srv.requests("GET", "/refresh")[0]
        assert own.header("Authorization") == f"Bearer {TOKEN_1}" and own.header("X-Api-Key") == CLIENT_SECRET
        for foreign in (other.uri + "/refresh", other.uri.replace("127.0.0.1", "localhost") + "/refresh",
                        "//" + other.uri.split("//", 1)[1] + "/refresh?storageRefreshToken=" + REFRESH_TOKEN,
                        "file:///etc/passwd"):
            with pytest.raises(UntrustedOriginError) as err:
                c.get_url(foreign)
            text = str(err.value)
            assert "refusing to send the catalog's credentials" in text and "client.refresh-credentials-endpoint" in text, text
            assert "\n" not in text
            assert_no_secrets(text)
        assert other.seen == []
    finally:
        other.close()


def test_an_other_origin_refresh_endpoint_falls_through_to_the_next_strategy(srv: Scripted) -> None:
    from pyspark_catalog_ext.refresh.strategies import StrategyChain

    other = Scripted()
    try:
        srv.config()
        creds = {"storage-credentials": [{"prefix": "s3://wh/db/t", "config": {"s3.access-key-id": "AK"}}]}
        srv.on("GET", T_PATH + "/credentials", R(200, creds))
        other.on("GET", "/refresh", R(200, creds))
        req: Any = {"catalog": "lake", "namespace": ["db"], "table": "t", "staged": False,
                    "refresh_endpoint": other.uri + "/refresh", "location": "s3://wh/db/t"}
        answer = StrategyChain().fetch(make(srv), req)
        assert answer["strategy"].startswith("credentials-endpoint (after refresh-endpoint failed: refusing")
        assert other.seen == []
    finally:
        other.close()


# ---------------------------------------------------------------------------- credentials only to trusted origins
TOKEN_ANSWER = R(200, {"access_token": TOKEN_1, "token_type": "bearer", "expires_in": 3600})


def oauth_client(srv: Scripted, **props: Any) -> CatalogClient:
    return make(srv, token=None, credential=f"client:{CLIENT_SECRET}", **props)


@pytest.mark.parametrize("part", ["overrides", "defaults"])
def test_a_config_oauth2_server_uri_on_another_origin_gets_no_client_secret(srv: Scripted, part: str) -> None:
    """PyIceberg builds its session from the properties merged with `/v1/config`: an
    `oauth2-server-uri` there would receive the client secret. Refused before sending, naming it."""
    other = Scripted()
    try:
        other.on("POST", "/tokens", TOKEN_ANSWER)
        body = {"defaults": {}, "overrides": {"prefix": "wh"}}
        body[part]["oauth2-server-uri"] = other.uri + "/tokens"
        srv.on("GET", "/v1/config", R(200, body))
        srv.on("POST", "/v1/oauth/tokens", TOKEN_ANSWER)
        with pytest.raises(UntrustedOriginError) as err:
            oauth_client(srv)
        text = str(err.value)
        origin = other.uri  # http://127.0.0.1:<port>: already the canonical form
        assert f"refusing to send the catalog's credentials to {origin} (oauth2-server-uri from /v1/config {part})" in text, text
        assert "catalog-ext.trusted-origins" in text and "\n" not in text
        assert err.value.origin == origin
        assert_no_secrets(text)
        assert other.seen == [], "the client secret went to the origin the config named"
    finally:
        other.close()


def test_an_oauth2_server_the_user_names_is_trusted_and_so_is_a_knob_origin(srv: Scripted) -> None:
    """The trust set is the user's: their own IdP, or an origin they list in catalog-ext.trusted-origins,
    may receive what the catalog's config points there."""
    idp, other = Scripted(), Scripted()
    try:
        for s in (idp, other):
            s.on("POST", "/tokens", TOKEN_ANSWER)
        srv.config()
        srv.on("GET", "/v1/wh/namespaces", R(200, {"namespaces": [["a"]]}))
        assert oauth_client(srv, **{"oauth2-server-uri": idp.uri + "/tokens"}).namespaces() == [("a",)]
        assert "client_secret=cs-Zq9%21secretvalue" in idp.requests("POST", "/tokens")[0].body.decode()
        srv.config(**{"oauth2-server-uri": other.uri + "/tokens"})
        srv.on("POST", "/v1/oauth/tokens", TOKEN_ANSWER)  # the token of the /v1/config call, before the answer
        c = oauth_client(srv, **{"catalog-ext.trusted-origins": other.uri})
        assert c.namespaces() == [("a",)] and len(other.requests("POST", "/tokens")) == 1
    finally:
        idp.close()
        other.close()


def test_a_config_oauth2_server_uri_on_the_catalogs_origin_is_used(srv: Scripted) -> None:
    srv.config(**{"oauth2-server-uri": srv.uri + "/other/tokens"})
    srv.on("POST", "/v1/oauth/tokens", TOKEN_ANSWER)
    srv.on("POST", "/other/tokens", TOKEN_ANSWER)
    oauth_client(srv)
    assert len(srv.requests("POST", "/other/tokens")) == 1


def _prefix_ports() -> tuple[int, int]:
    """Two free ports, the second's digits starting with the first's (8181 and 81810)."""
    for first in range(2000, 6553):
        second = first * 10 + 7
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", first))
                b.bind(("127.0.0.1", second))
        except OSError:
            continue
        return first, second
    pytest.skip("no pair of free ports")


def test_sigv4_signs_for_the_catalogs_origin_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyIceberg mounts its SigV4 adapter on the catalog URI as a string prefix: `http://h:2000` also
    prefixes `http://h:20007`, so a session call there would be signed with the user's AWS keys and
    sent. That adapter checks the origin too."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CLIENT_SECRET)
    first, second = _prefix_ports()
    catalog, other = Scripted(port=first), Scripted(port=second)
    try:
        catalog.config()
        other.on("GET", "/x", R(200, {}))
        c = make(catalog, token=None, **{"rest.sigv4-enabled": "true", "rest.signing-name": "glue",
                                         "rest.signing-region": "us-east-1"})
        with pytest.raises(UntrustedOriginError, match=f"to http://127.0.0.1:{second}:"):
            c._session.get(other.uri + "/x")
        assert other.seen == []
    finally:
        catalog.close()
        other.close()


def test_the_signer_gets_the_token_on_a_trusted_origin_only(srv: Scripted) -> None:
    """`send_to`: how the doctor asks a catalog's S3 signer, with the catalog's token and headers."""
    other = Scripted()
    try:
        srv.config()
        srv.on("POST", "/v1/aws/s3/sign", R(200, {"uri": "x", "headers": {}}))
        other.on("POST", "/v1/aws/s3/sign", R(200, {"uri": "x", "headers": {}}))
        c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
        assert c.send_to("POST", srv.uri + "/v1/aws/s3/sign", key="s3.signer.uri", json={}).status_code == 200
        assert srv.requests("POST", "/v1/aws/s3/sign")[0].header("Authorization") == f"Bearer {TOKEN_1}"
        with pytest.raises(UntrustedOriginError, match=r"\(s3.signer.endpoint\)"):
            c.send_to("POST", other.uri + "/v1/aws/s3/sign", key="s3.signer.endpoint", json={})
        assert other.seen == []
    finally:
        other.close()


# ---------------------------------------------------------------------------- no redirects, no hidden re-sends
REDIRECTS = (301, 302, 303, 307, 308)


@pytest.fixture
def elsewhere() -> Iterator[Scripted]:
    """Another origin a redirect points at; it must never be asked anything."""
    s = Scripted()
    s.on("GET", "/elsewhere", R(200, TABLE_RESULT))
    s.on("POST", "/elsewhere", R(200, COMMIT_RESULT))
    yield s
    s.close()


@pytest.mark.parametrize("status", REDIRECTS)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_redirect_is_never_followed(srv: Scripted, elsewhere: Scripted, status: int, method: str) -> None:
    from pyspark_catalog_ext.errors import CatalogRedirectError

    srv.config()
    target = elsewhere.uri + "/elsewhere"
    srv.on(method, T_PATH, R(status, headers={"Location": target + "?token=" + TOKEN_2}))
    c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
    with pytest.raises(CatalogRedirectError) as err:
        if method == "GET":
            c.load_table_json(("db", "t"))
        else:
            c.commit_table_json(("db", "t"), [], [{"action": "set-properties", "updates": {"a": "b"}}])
    text = str(err.value)
    assert "\n" not in text and f"HTTP {status}" in text and target in text and "not followed" in text, text
    assert err.value.status == status and err.value.location == target
    assert_no_secrets(text)
    assert len(srv.requests(method, T_PATH)) == 1 and len(srv.requests()) == 2  # config + this call
    assert elsewhere.seen == []


@pytest.mark.parametrize("status", (302, 307))
def test_pyicebergs_own_calls_follow_no_redirect_either(srv: Scripted, elsewhere: Scripted, status: int) -> None:
    """PyIceberg's own load_table (and /v1/config at start) go through the same session."""
    from pyspark_catalog_ext.errors import CatalogRedirectError

    srv.config()
    srv.on("GET", T_PATH, R(status, headers={"Location": elsewhere.uri + "/elsewhere"}))
    c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
    with pytest.raises(CatalogRedirectError):
        c.load_table(("db", "t"))
    srv.on("GET", "/v1/config", R(status, headers={"Location": elsewhere.uri + "/elsewhere"}))
    with pytest.raises(CatalogRedirectError) as err:
        make(srv)
    assert "set --uri" in str(err.value)
    assert elsewhere.seen == []


def test_a_custom_header_never_reaches_another_origin_through_a_redirect(srv: Scripted, elsewhere: Scripted) -> None:
    """requests drops Authorization on a cross-origin redirect but keeps session headers (X-Api-Key)."""
    srv.config()
    srv.on("GET", "/v1/wh/namespaces", R(302, headers={"Location": elsewhere.uri + "/elsewhere"}))
    c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
    with pytest.raises(CatalogError):
        c.call("GET", "/v1/{prefix}/namespaces")
    assert [s.header("X-Api-Key") for s in elsewhere.seen] == []


@pytest.mark.parametrize("status", (503, 429))
def test_a_post_answered_with_retry_after_is_not_resent(srv: Scripted, status: int) -> None:
    srv.config()
    srv.on("POST", T_PATH, R(status, headers={"Retry-After": "0"}), R(200, COMMIT_RESULT))
    with pytest.raises(CatalogUnavailableError):
        make(srv).commit_table_json(("db", "t"), [], [{"action": "set-properties", "updates": {"a": "b"}}])
    assert len(srv.requests("POST", T_PATH)) == 1


@pytest.mark.parametrize("status", (503, 429))
def test_sigv4_mutations_answered_with_retry_after_are_not_resent(srv: Scripted, status: int) -> None:
    """PyIceberg's SigV4 adapter brings its own urllib3 Retry(10), which repeats DELETE (and PUT) on
    503/429 with Retry-After; the catalog's session gives it ours."""
    srv.config()
    srv.on("DELETE", T_PATH, R(status, headers={"Retry-After": "0"}), R(204))
    srv.on("POST", T_PATH, R(status, headers={"Retry-After": "0"}), R(200, COMMIT_RESULT))
    srv.on("GET", T_PATH, R(status, headers={"Retry-After": "0"}), R(200, TABLE_RESULT))
    c = make(srv, token=None, **{"rest.sigv4-enabled": "true", "rest.signing-region": "us-east-1",
                                 "client.access-key-id": "AKIATEST", "client.secret-access-key": CLIENT_SECRET})
    with pytest.raises(CatalogUnavailableError):
        c.remove_table(("db", "t"))
    with pytest.raises(CatalogUnavailableError):
        c.commit_table_json(("db", "t"), [], [{"action": "set-properties", "updates": {"a": "b"}}])
    assert len(srv.requests("DELETE", T_PATH)) == 1 and len(srv.requests("POST", T_PATH)) == 1
    assert srv.requests("DELETE", T_PATH)[0].header("Authorization").startswith("AWS4-HMAC-SHA256")
    assert c.load_table_json(("db", "t"))["metadata"]["table-uuid"] == "u-1"  # a read may be repeated
    assert len(srv.requests("GET", T_PATH)) == 2


def test_an_expired_token_is_renewed_once(srv: Scripted) -> None:
    """OAuth2 client credentials: a 401 (419 on Gravitino) renews the token through PyIceberg's manager and resends."""
    srv.config()
    first = R(200, {"access_token": TOKEN_1, "token_type": "bearer", "expires_in": 3600})
    # PyIceberg fetches a token for its /v1/config session and one for the catalog's session.
    srv.on("POST", "/v1/oauth/tokens", first, first, R(200, {"access_token": TOKEN_2, "token_type": "bearer", "expires_in": 3600}))
    srv.on("GET", T_PATH, R(419), R(200, TABLE_RESULT))
    c = make(srv, token=None, credential=f"client:{CLIENT_SECRET}", **{"oauth2-server-uri": srv.uri + "/v1/oauth/tokens"})
    assert c.load_table_json(("db", "t"))["metadata"]["table-uuid"] == "u-1"
    auths = [s.header("Authorization") for s in srv.requests("GET", T_PATH)]
    assert auths == [f"Bearer {TOKEN_1}", f"Bearer {TOKEN_2}"]
    assert_no_secrets(repr(c), c.auth_kind)


def test_sigv4_without_aws_credentials_is_one_line(srv: Scripted, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    srv.config()
    props = {"token": None, "rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1"}
    with pytest.raises(ConfigError, match="SigV4 .* none were found"):
        make(srv, **props)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CLIENT_SECRET)
    c = make(srv, **props)
    assert c.auth_kind == "sigv4 (glue)"
    assert "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" in (srv.requests("GET", "/v1/config")[-1].header("Authorization") or "")
    assert_no_secrets(repr(c))


@pytest.mark.parametrize("header,sent", [(None, None), ("vended-credentials", "vended-credentials"),
                                         ("remote-signing", "remote-signing")])
def test_the_delegation_header_is_sent_only_when_asked(srv: Scripted, header: str | None, sent: str | None) -> None:
    """As the Spark catalog: a profile without the header (Glue) asks for no delegation."""
    srv.config()
    srv.on("GET", T_PATH, R(200, TABLE_RESULT))
    c = make(srv, **({"header.X-Iceberg-Access-Delegation": header} if header else {}))
    c.load_table_json(("db", "t"))
    assert srv.requests("GET", T_PATH)[0].header("X-Iceberg-Access-Delegation") == sent
    assert c.access_delegation == sent


def test_repr_never_shows_secrets(srv: Scripted) -> None:
    srv.config()
    c = make(srv, **{"header.X-Api-Key": CLIENT_SECRET})
    assert_no_secrets(repr(c), str(c))
    assert c.auth_kind == "bearer"


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


def test_tls_failure_mentions_ca_bundle_and_custom_ca_works(tls_files: tuple[str, str]) -> None:
    cert, key = tls_files
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = Scripted(tls=ctx)
    try:
        server.config()
        with pytest.raises(CatalogError) as info:
            make(server)
        assert not isinstance(info.value, CatalogUnavailableError)
        assert "TLS" in str(info.value) and "CA bundle" in str(info.value) and server.uri in str(info.value)
        assert make(server, ssl={"cabundle": cert}).prefix == "wh"  # PyIceberg's own CA setting
    finally:
        server.close()


# ---------------------------------------------------------------------------- a real catalog (SeaweedFS)
def lake_props(lakehouse: Any, **over: str) -> dict[str, str]:
    info = lakehouse.info
    return {"uri": info.iceberg_uri, "warehouse": info.warehouse, "credential": info.credential,
            "oauth2-server-uri": info.oauth2_server_uri, "header.X-Iceberg-Access-Delegation": "vended-credentials", **over}


def test_seaweedfs_stage_create_vends_and_commit_publishes(lakehouse: Any) -> None:
    c = open_catalog(lake_props(lakehouse))
    ns = "rest_it"
    if not c.has_namespace(ns):
        c.make_namespace(ns)
    body = {"name": "staged", "schema": {"type": "struct", "schema-id": 0,
                                         "fields": [{"id": 1, "name": "a", "type": "long", "required": False}]}}
    staged = c.create_table_json(ns, body, stage_create=True)
    assert staged["storage-credentials"][0]["config"]["s3.access-key-id"]
    assert not c.has_table((ns, "staged"))
    with pytest.raises(CatalogNotFoundError) as missing:
        c.load_credentials_json((ns, "staged"))
    assert missing.value.kind == "endpoint"  # SeaweedFS has no /credentials


def test_seaweedfs_bad_secret_is_a_one_line_401(lakehouse: Any) -> None:
    info = lakehouse.info
    with pytest.raises(CatalogAuthError) as err:
        open_catalog(lake_props(lakehouse, credential=f"{info.access_key}:{CLIENT_SECRET}"))
    assert "401" in str(err.value) and "\n" not in str(err.value)
    assert_no_secrets(str(err.value))
    assert info.secret_key not in str(err.value)


def test_seaweedfs_wrong_warehouse_is_not_found(lakehouse: Any) -> None:
    with pytest.raises(CatalogError) as err:
        open_catalog(lake_props(lakehouse, warehouse="no-such-bucket")).namespaces()
    assert "no-such-bucket" in str(err.value) or "not found" in str(err.value).lower()


@pytest.mark.parametrize("status", (307, 308))
def test_the_first_token_request_follows_no_redirect(srv: Scripted, elsewhere: Scripted, status: int) -> None:
    """PyIceberg fetches the first OAuth2 token while building its session: a 307/308 there would
    re-send the client secret (in the form body) to Location."""
    from pyspark_catalog_ext.errors import CatalogRedirectError

    srv.config()
    elsewhere.on("POST", "/tokens", R(200, {"access_token": TOKEN_1, "token_type": "bearer", "expires_in": 3600}))
    srv.on("POST", "/v1/oauth/tokens", R(status, headers={"Location": elsewhere.uri + "/tokens"}))
    with pytest.raises(CatalogRedirectError) as err:
        make(srv, token=None, credential=f"client:{CLIENT_SECRET}", **{"oauth2-server-uri": srv.uri + "/v1/oauth/tokens"})
    assert elsewhere.seen == [] and elsewhere.uri + "/tokens" in str(err.value)
    assert_no_secrets(str(err.value))
