"""`GuardedRestCatalog` is a drop-in for PyIceberg's `RestCatalog`: code written against RestCatalog
keeps working when ours is swapped in. For the same case each raises what PyIceberg raises (ours is
also our one-line `CatalogExtError`), and SigV4 credentials are looked for when PyIceberg looks
for them: when a request is signed.

Each case runs PyIceberg's own RestCatalog first, so the expectation is what PyIceberg really does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import OAuthError

from pyspark_catalog_ext.errors import CatalogAuthError, CatalogError, ConfigError
from pyspark_catalog_ext.pyiceberg_ext import GuardedRestCatalog
from tests.servers.scripted_catalog import R, Scripted

CATALOGS = [pytest.param(RestCatalog, id="pyiceberg"), pytest.param(GuardedRestCatalog, id="ours")]


def _build(cls: type, **props: Any) -> Any:
    return cls("dropin", refresh=False, **props) if cls is GuardedRestCatalog else cls("dropin", **props)


@pytest.fixture
def srv() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.close()


@pytest.mark.parametrize("cls", CATALOGS)
def test_a_rejected_client_credential_is_pyicebergs_oauth_error(lakehouse, cls: type) -> None:
    info = lakehouse.info
    with pytest.raises(OAuthError) as caught:
        _build(cls, uri=info.iceberg_uri, warehouse=info.warehouse, credential=f"{info.access_key}:wrong-secret")
    if cls is GuardedRestCatalog:
        assert isinstance(caught.value, CatalogAuthError)
        assert "\n" not in str(caught.value) and "wrong-secret" not in str(caught.value)


@pytest.mark.parametrize("cls", CATALOGS)
def test_a_missing_uri_is_a_key_error(cls: type) -> None:
    with pytest.raises(KeyError) as caught:
        _build(cls, warehouse="wh")
    if cls is GuardedRestCatalog:
        assert isinstance(caught.value, ConfigError)
        assert str(caught.value) == "the catalog has no uri: pass uri=http(s)://host[:port][/path]"


@pytest.mark.parametrize("cls", CATALOGS)
def test_an_invalid_config_answer_is_pydantics_validation_error(srv: Scripted, cls: type) -> None:
    srv.on("GET", "/v1/config", R(200, {"defaults": "not an object", "overrides": {}}))
    with pytest.raises(pydantic.ValidationError) as caught:
        _build(cls, uri=srv.uri, token="t0k3n")
    if cls is GuardedRestCatalog:
        assert isinstance(caught.value, CatalogError)
        assert "\n" not in str(caught.value) and "GET /v1/config" in str(caught.value)


def _no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


SIGV4 = {"rest.sigv4-enabled": "true", "rest.signing-name": "glue", "rest.signing-region": "us-east-1"}


@pytest.mark.parametrize("cls", CATALOGS)
def test_sigv4_credentials_are_looked_for_when_a_request_is_signed(srv: Scripted, cls: type,
                                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """None anywhere: PyIceberg fails signing its first request (AttributeError), and so do we, in one
    line. Credentials a caller hands PyIceberg's signer (a botocore session) count, as for PyIceberg."""
    import botocore.session

    _no_aws_credentials(monkeypatch, tmp_path)
    srv.config()
    with pytest.raises(AttributeError) as caught:
        _build(cls, uri=srv.uri, **SIGV4)
    if cls is GuardedRestCatalog:
        assert isinstance(caught.value, ConfigError) and "none were found" in str(caught.value)
    supplied = botocore.session.get_session()
    supplied.set_credentials("AKIDEXAMPLE", "example-secret")
    catalog = _build(cls, uri=srv.uri, botocore_session=supplied, **SIGV4)
    assert catalog is not None
    assert "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" in (srv.requests("GET", "/v1/config")[-1].header("Authorization") or "")
