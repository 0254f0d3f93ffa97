"""GCS and ADLS tokens in the PyIceberg refresher: their stated expiry schedules renewals, each ADLS
account's filesystem gets that account's SAS only, and the stores' refusals are told apart (expiry:
renew; scope: raise). The stores themselves: tests/slow/test_stores_pyiceberg.py."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from pyspark_catalog_ext.pyiceberg_ext.storefs import StorePyArrowFileIO
from pyspark_catalog_ext.refresh.entry import TableEntry, _expiry_s, _key_set
from pyspark_catalog_ext.refresh.rejection import sas_expiry_s, store_rejection
from pyspark_catalog_ext.refresh.vended import is_vended_key
from pyspark_catalog_ext.storage.accounts import adls_account
from tests.servers.base import ThreadedServer, drain_body, send_response_head

H1, H2 = "acct1.dfs.core.windows.net", "acct2.dfs.core.windows.net"


def sas(expires_s: float) -> str:
    se = datetime.fromtimestamp(int(expires_s), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return f"sv=2025-01-05&se={se}&sr=c&sp=racwdl&sig=abc"


def test_the_stated_expiry_of_gcs_and_adls_tokens_is_read() -> None:
    assert _expiry_s({"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "5000"}) == 5.0
    assert _expiry_s({f"adls.sas-token.{H1}": "s", f"adls.sas-token-expires-at-ms.{H1}": "9000",
                      f"adls.sas-token.{H2}": "s", f"adls.sas-token-expires-at-ms.{H2}": "7000"}) == 7.0
    assert _expiry_s({"gcs.oauth2.token": "t"}) == float("inf")


def test_a_table_of_gcs_or_adls_tokens_is_scheduled_by_their_expiry() -> None:
    now = time.time()
    entry = TableEntry("c", ("db", "t"), location="gs://b/t", staged=False)
    entry.update({"gcs.oauth2.token": "t1", "gcs.oauth2.token-expires-at": str(int((now + 10) * 1000))}, [])
    assert entry.expires_at_s == pytest.approx(now + 10, abs=1)
    entry.update({}, [{"prefix": "abfs://c@" + H1 + "/t",
                       "config": {f"adls.sas-token.{H1}": "s", f"adls.sas-token-expires-at-ms.{H1}": str(int((now + 20) * 1000))}}])
    assert entry.expires_at_s == pytest.approx(now + 20, abs=1)
    assert entry.stated_lifetime_s == pytest.approx(20, abs=1)


def test_a_storage_refresh_token_is_kept_until_an_answer_rotates_it() -> None:
    # A /credentials answer to a storage-refresh-token need not carry a new one: the next renewal
    # must still use the refresh token, not fall through to a reload.
    prefix = f"abfs://c@{H1}/t"
    entry = TableEntry("c", ("db", "t"), location=prefix, staged=False)

    def answer(sas_token: str, refresh_token: str | None) -> list[dict]:
        cred = {"prefix": prefix, "config": {f"adls.sas-token.{H1}": sas_token}}
        return [{**cred, "storage-refresh-token": refresh_token}] if refresh_token else [cred]

    entry.update({}, answer("s1", "rt1"))
    entry.update({}, answer("s2", None))
    assert entry.request()["storage_refresh_tokens"] == {prefix: "rt1"}
    entry.update({}, answer("s3", "rt2"))
    assert entry.request()["storage_refresh_tokens"] == {prefix: "rt2"}


def test_a_renewed_gcs_or_adls_token_is_a_new_key_set() -> None:
    assert _key_set({"gcs.oauth2.token": "a"}, []) != _key_set({"gcs.oauth2.token": "b"}, [])
    assert _key_set({}, [{"config": {f"adls.sas-token.{H1}": "a"}}]) != _key_set({}, [{"config": {f"adls.sas-token.{H1}": "b"}}])
    assert _key_set({"gcs.oauth2.token": "a"}, []) == _key_set({"gcs.oauth2.token": "a"}, [])


def test_vended_keys_are_the_tokens_and_their_expiries_only() -> None:
    assert all(is_vended_key(k) for k in ("gcs.oauth2.token", "gcs.oauth2.token-expires-at", f"adls.sas-token.{H1}",
                                          f"adls.sas-token-expires-at-ms.{H1}", "s3.secret-access-key"))
    assert not any(is_vended_key(k) for k in ("gcs.service.host", f"adls.connection-string.{H1}", "s3.endpoint"))


def test_each_adls_account_gets_its_own_sas_and_never_another() -> None:
    props = {f"adls.sas-token.{H1}": "sas1", f"adls.sas-token.{H2}": "sas2",
             f"adls.connection-string.{H1}": "http://127.0.0.1:1/acct1"}
    first, second = adls_account(props, "c@" + H1), adls_account(props, "c@" + H2)
    assert first is not None and (first.sas_token, first.endpoint) == ("sas1", "http://127.0.0.1:1/acct1")
    assert second is not None and (second.sas_token, second.endpoint) == ("sas2", "https://acct2.blob.core.windows.net")
    blob = adls_account(props, "c@acct2.blob.core.windows.net")  # wasb: the same account's SAS
    assert blob is not None and blob.sas_token == "sas2"
    assert adls_account(props, "c@acct3.dfs.core.windows.net") is None
    assert "sas1" not in repr(first)


class _BlobEndpoint(ThreadedServer):
    """Records each request line and answers 404 ContainerNotFound, as Azure does for a missing container."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle(self, h) -> None:
        self.paths.append(h.path)
        drain_body(h)
        send_response_head(h, 404, "Not Found", [("x-ms-error-code", "ContainerNotFound"), ("Content-Length", "0")])


def test_pyarrow_addresses_the_container_of_an_abfs_location_with_the_sas_as_its_query() -> None:
    # Arrow appends `sas_token` to the account URL as it is, and takes a path's first segment as the
    # container: what it sent shows both (a vended SAS has no leading "?").
    pytest.importorskip("pyarrow.fs", reason="pyarrow's AzureFileSystem").AzureFileSystem  # noqa: B018
    with _BlobEndpoint() as endpoint:
        io = StorePyArrowFileIO({f"adls.sas-token.{H1}": "sv=2025-01-05&sr=c&sp=racwdl&sig=abc",
                                 f"adls.connection-string.{H1}": f"{endpoint.url}/acct1"})
        location = f"abfs://warehouse@{H1}/db/t/data/f.parquet"
        assert io.parse_location(location) == ("abfs", f"warehouse@{H1}", "warehouse/db/t/data/f.parquet")
        try:
            io.new_input(location).exists()
        except OSError:
            pass  # only the requests matter
    assert endpoint.paths, "Arrow sent nothing"
    for path in endpoint.paths:
        route, _, query = path.partition("?")
        assert route.rstrip("/") in ("/acct1/warehouse", "/acct1/warehouse/db/t/data/f.parquet"), path
        assert "sig=abc" in query.split("&"), path


def test_gcs_401_is_expiry_and_403_is_scope() -> None:
    from gcsfs.retry import HttpError

    expired = store_rejection(HttpError({"code": 401, "message": "Invalid Credentials"}), "gs://b/x", None, time.time())
    assert expired is not None and expired.expired
    scope = store_rejection(OSError("Forbidden: b/x\nno access"), "gs://b/x", None, time.time())
    assert scope is not None and not scope.expired
    assert store_rejection(FileNotFoundError("b/x"), "gs://b/x", None, time.time()) is None


def _azure(code: str, status: int = 403) -> Exception:
    from azure.core.exceptions import HttpResponseError

    error = HttpResponseError(message=f"ErrorCode:{code}")
    error.status_code, error.error_code = status, code
    try:
        raise RuntimeError("Failed to upload block") from error  # as adlfs raises it
    except RuntimeError as wrapped:
        return wrapped


def test_azure_refusals_renew_only_an_expired_sas() -> None:
    now = time.time()
    loc = f"abfs://c@{H1}/x"
    assert store_rejection(_azure("AuthenticationFailed"), loc, sas(now + 600), now).expired  # type: ignore[union-attr]
    assert store_rejection(_azure("AuthorizationFailure"), loc, sas(now - 5), now).expired  # type: ignore[union-attr]
    assert not store_rejection(_azure("AuthorizationFailure"), loc, sas(now + 600), now).expired  # type: ignore[union-attr]
    assert store_rejection(_azure("BlobNotFound", 404), loc, sas(now - 5), now) is None
    pyarrow_said = OSError("GetFileInfo failed. Azure Error: [AuthenticationFailed] 403 Server failed to authenticate")
    assert store_rejection(pyarrow_said, loc, None, now).expired  # type: ignore[union-attr]
    assert sas_expiry_s(sas(1_800_000_000)) == 1_800_000_000
