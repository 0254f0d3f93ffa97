"""Where a PyIceberg table's FileIO may send the catalog's credentials, with a loopback attacker that
must receive nothing.

- Table **properties** are data: anyone allowed to set them could write `s3.signer=S3V4RestSigner`
  and `s3.signer.uri=<attacker>` (PyIceberg merges them into the FileIO's properties, so its signer
  would post every reader's bearer token there), an endpoint, a proxy, keys or a FileIO class. None
  of them configures a FileIO, in vended or signing mode, with either FileIO.
- A **server-given** signer URL (table config, Iceberg 1.12's remote-signing-config, `/v1/config`)
  on another origin is refused before anything is sent, in one line naming the key and the origin;
  an origin the user trusts (`catalog-ext.trusted-origins`) is used.
- A **redirect** from the signer is not followed (a 307 would re-send the POST, token included).
"""

from __future__ import annotations

import pyiceberg.io
import pytest

from pyspark_catalog_ext.errors import SignerError, UntrustedOriginError
from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import ID_SCHEMA, id_rows
from tests.servers.signer_proxy import SIGN_ROUTE, Recorder, SignerProxy

FILEIOS = {"pyarrow": "pyiceberg.io.pyarrow.PyArrowFileIO", "fsspec": "pyiceberg.io.fsspec.FsspecFileIO"}
OTHER_FILEIO = {"pyarrow": FILEIOS["fsspec"], "fsspec": FILEIOS["pyarrow"]}
NS = "trust"
SECRET = "trust-test-signer-client-secret"


def url_valued_keys() -> set[str]:
    """Every URL-valued property key PyIceberg 0.12 defines (read from its modules, not typed here),
    plus the catalog's own and Iceberg 1.12's signer keys."""
    keys = {v for k, v in vars(pyiceberg.io).items()
            if k.isupper() and isinstance(v, str) and "." in v and "DEFAULT" not in k
            and any(w in k for w in ("URI", "ENDPOINT", "HOST", "PROXY", "AUTHORITY", "URL"))}
    assert {"s3.endpoint", "s3.proxy-uri", "s3.signer.uri", "s3.signer.endpoint"} <= keys, keys
    return keys | {"uri", "oauth2-server-uri", "signer.uri", "signer.endpoint"}


@pytest.fixture(scope="module")
def attacker():
    with Recorder() as server:
        yield server


@pytest.fixture(autouse=True)
def no_requests_yet(attacker):
    with attacker._lock:
        attacker.requests.clear()


@pytest.fixture(scope="module")
def signer(lakehouse):
    """The lakehouse's signer (signing mode) in front of the session lakehouse's SeaweedFS."""
    info = lakehouse.info
    proxy = SigningCatalogProxy(f"http://127.0.0.1:{info.ports['iceberg']}", info.s3_endpoint, info.access_key,
                                info.secret_key, clients={CLIENT_ID: SECRET}).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def front(signer):
    with SignerProxy(signer.url) as proxy:
        yield proxy


def signing_catalog(lakehouse, front: SignerProxy, io: str, **extra):
    return pyiceberg_catalog(lakehouse, uri=front.url, credential=f"{CLIENT_ID}:{SECRET}", delegation="remote-signing",
                             **{"oauth2-server-uri": f"{front.url}/v1/oauth/tokens", "py-io-impl": FILEIOS[io]}, **extra)


def fresh_table(cat, name: str):
    cat.create_namespace_if_not_exists(NS)
    if cat.table_exists(f"{NS}.{name}"):
        cat.drop_table(f"{NS}.{name}")
    table = cat.create_table(f"{NS}.{name}", ID_SCHEMA)
    table.append(id_rows(0, 10))
    return table


# ------------------------------------------------------------------------------ properties are data
@pytest.mark.parametrize("mode", ["vended", "signing"])
@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_table_properties_never_configure_the_fileio(lakehouse, front, attacker, mode, io):
    """A table whose properties name the attacker for every URL-valued key (and a signer, keys and
    another FileIO class): readers and writers with each FileIO scan and append as before, the
    attacker receives nothing, and the FileIO carries none of those values."""
    if mode == "vended":
        cat = pyiceberg_catalog(lakehouse, **{"py-io-impl": FILEIOS[io]})
    else:
        cat = signing_catalog(lakehouse, front, io)
    table = fresh_table(cat, f"props_{mode}_{io}")
    poison = {key: f"{attacker.url}/{key}" for key in url_valued_keys()}
    poison.update({"s3.signer": "S3V4RestSigner", "s3.remote-signing-enabled": "true", "py-io-impl": OTHER_FILEIO[io],
                   "s3.access-key-id": "attacker-key", "s3.secret-access-key": "attacker-secret",
                   "s3.session-token": "attacker-token", "token": "attacker-token", "header.X-Attacker": "1"})
    with table.transaction() as tx:
        tx.set_properties(**poison)
    try:
        reader = cat.load_table(f"{NS}.props_{mode}_{io}")
        assert reader.metadata.properties["s3.signer.uri"] == poison["s3.signer.uri"], "the properties were stored"
        reader.append(id_rows(10, 20))
        assert reader.scan().to_arrow().num_rows == 20
    finally:
        assert attacker.requests == [], [(r["method"], r["path"], "Authorization" in r["headers"]) for r in attacker.requests]
    used = getattr(reader.io, "_factory", type(reader.io))  # a RefreshingFileIO's delegate class
    assert ("PyArrow" if io == "pyarrow" else "Fsspec") in used.__name__, used
    shown = {str(v) for v in reader.io.properties.values()}
    assert not any(attacker.url in v or v.startswith("attacker") for v in shown), reader.io.properties
    cat.close()


# ------------------------------------------------------------------------- server-given signer URLs
CHANNELS = {
    "table config s3.signer.uri": ({"s3.signer.uri": "{a}"}, None, {}, "s3.signer.uri"),
    "table config signer.uri": ({"signer.uri": "{a}"}, None, {}, "signer.uri"),
    "table config absolute s3.signer.endpoint": ({"s3.signer.endpoint": "{a}/sign"}, None, {}, "s3.signer.endpoint"),
    "table config absolute signer.endpoint": ({"signer.endpoint": "{a}/sign"}, None, {}, "signer.endpoint"),
    "remote-signing-config base-uri": ({}, {"base-uri": "{a}"}, {}, "remote-signing-config.base-uri"),
    "remote-signing-config absolute endpoint-path": ({}, {"endpoint-path": "{a}/sign"}, {},
                                                     "remote-signing-config.endpoint-path"),
    "/v1/config override s3.signer.uri": ({}, None, {"s3.signer.uri": "{a}"}, "s3.signer.uri"),
}


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_a_server_given_signer_on_another_origin_is_refused_before_anything_is_sent(lakehouse, front, attacker, channel):
    table_config, signing_config, overrides, key = CHANNELS[channel]
    fill = lambda d: {k: v.format(a=attacker.url) for k, v in d.items()}  # noqa: E731
    cat = signing_catalog(lakehouse, front, "fsspec")
    fresh_table(cat, "server_given")
    front.table_config = fill(table_config)
    front.signing_config = fill(signing_config) if signing_config is not None else None
    front.config_overrides = fill(overrides)
    if not table_config:  # the table answer names no signer the old way: the signing config or settings decide
        front.drop_table_keys = {"s3.signer.uri", "s3.signer.endpoint"}
    with pytest.raises(UntrustedOriginError) as err:
        signing_catalog(lakehouse, front, "fsspec").load_table(f"{NS}.server_given").scan().to_arrow()
    line = str(err.value)
    assert "\n" not in line and key in line and f"127.0.0.1:{attacker.port}" in line, line
    assert "catalog-ext.trusted-origins" in line
    assert attacker.requests == []


def test_an_origin_the_user_trusts_is_used(lakehouse, front, attacker):
    """The check is by origin, and the user decides: trusted, the same server-given signer gets the
    sign requests (and the catalog's token)."""
    cat = signing_catalog(lakehouse, front, "fsspec", **{"catalog-ext.trusted-origins": attacker.url})
    table = fresh_table(signing_catalog(lakehouse, front, "fsspec"), "trusted")
    front.table_config = {"s3.signer.uri": attacker.url}
    table = cat.load_table(f"{NS}.trusted")
    with pytest.raises(SignerError):  # the recorder answers `{}`: no signature
        table.scan().to_arrow()
    assert attacker.requests and all(r["headers"].get("Authorization", "").startswith("Bearer ") for r in attacker.requests)


def test_a_signer_host_that_changes_on_the_wire_is_refused_where_it_is_sent(lakehouse, front, attacker, monkeypatch):
    """`catalog.glaß.test` is `catalog.glass.test` to IDNA 2003 (Python's codec) but `requests` sends
    it as `catalog.xn--gla-7ka.test` (IDNA 2008): another host. Hosts are ASCII only
    (trust-rules.json), so the table's signer is refused at load, in one line, whatever the user
    trusts; the attacker (the HTTP proxy every non-loopback request would go through) receives
    nothing, token included. (Each signer request is also checked where it is sent.)"""
    monkeypatch.setenv("HTTP_PROXY", attacker.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    trusted, sent = f"http://catalog.glass.test:{front.port}", f"http://catalog.glaß.test:{front.port}"
    fresh_table(signing_catalog(lakehouse, front, "fsspec"), "idna").append(id_rows(0, 5))
    front.table_config = {"s3.signer.uri": sent}
    cat = signing_catalog(lakehouse, front, "fsspec", **{"catalog-ext.trusted-origins": trusted})
    with pytest.raises(UntrustedOriginError) as err:
        cat.load_table(f"{NS}.idna").scan().to_arrow()
    line = str(err.value)
    assert "\n" not in line and "non-ASCII" in line and "s3.signer.uri" in line, line
    assert attacker.requests == []
    cat.close()


# ---------------------------------------------------------------------------------------- redirects
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("io", sorted(FILEIOS))
def test_a_redirect_from_the_signer_is_not_followed(lakehouse, front, attacker, status, io):
    cat = signing_catalog(lakehouse, front, io)
    table = fresh_table(cat, f"redirect_{io}")
    fault = front.faults.add("redirect", "POST", SIGN_ROUTE, times=1000, status=status, location=f"{attacker.url}/steal")
    with pytest.raises(SignerError) as err:
        table.append(id_rows(10, 20))
    line = str(err.value)
    assert "\n" not in line and f"HTTP {status}" in line and "redirects are not followed" in line, line
    assert fault.fired >= 1
    assert attacker.requests == []
    cat.close()
