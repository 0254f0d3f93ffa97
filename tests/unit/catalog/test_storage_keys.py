"""Storage-credential wire names are declared once (catalog/storage_keys.py), equal PyIceberg's own
constants where PyIceberg has them, and are parsed once (refresh/vended.py) for the doctor, the
refresher and the PyIceberg catalog alike."""

from __future__ import annotations

import ast
from pathlib import Path

import pyiceberg.io as pyiceberg_io
import pytest

import pyspark_catalog_ext
from pyspark_catalog_ext.catalog import storage_keys
from pyspark_catalog_ext.doctor.context import VendedCredential
from pyspark_catalog_ext.doctor.stores import store_credentials
from pyspark_catalog_ext.refresh.vended import credential_identities, expiry_ms, stated_expiry_s, store_tokens

PACKAGE = Path(pyspark_catalog_ext.__file__).parent
H1, H2 = "acct1.dfs.core.windows.net", "acct2.dfs.core.windows.net"

#: Our name -> PyIceberg's name, for the keys both define (same value, same meaning).
SHARED = {"S3_ACCESS_KEY_ID": "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY": "S3_SECRET_ACCESS_KEY",
          "S3_SESSION_TOKEN": "S3_SESSION_TOKEN", "GCS_TOKEN": "GCS_TOKEN", "GCS_TOKEN_EXPIRY": "GCS_TOKEN_EXPIRES_AT_MS",
          "GCS_SERVICE_HOST": "GCS_SERVICE_HOST", "S3_ENDPOINT": "S3_ENDPOINT", "S3_REGION": "S3_REGION",
          "CLIENT_REGION": "AWS_REGION", "S3_PROXY_URI": "S3_PROXY_URI", "S3_SIGNER_URI": "S3_SIGNER_URI",
          "S3_SIGNER_ENDPOINT": "S3_SIGNER_ENDPOINT", "S3_FORCE_VIRTUAL_ADDRESSING": "S3_FORCE_VIRTUAL_ADDRESSING",
          "S3_CONNECT_TIMEOUT": "S3_CONNECT_TIMEOUT", "S3_REQUEST_TIMEOUT": "S3_REQUEST_TIMEOUT"}


@pytest.mark.parametrize("ours,theirs", sorted(SHARED.items()))
def test_our_names_equal_pyicebergs(ours: str, theirs: str) -> None:
    assert getattr(storage_keys, ours) == getattr(pyiceberg_io, theirs)


def test_adls_prefixes_are_pyicebergs_names_per_account() -> None:
    """Iceberg's per-account ADLS keys are PyIceberg's bare names plus `.<host>`."""
    assert storage_keys.ADLS_SAS == pyiceberg_io.ADLS_SAS_TOKEN + "."
    assert storage_keys.ADLS_CONNECTION == pyiceberg_io.ADLS_CONNECTION_STRING + "."


def _code_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


#: Modules that spell the same names on another wire.
OTHER_WIRES = {"clients/trino.py": "a Trino catalog file's own s3.* properties"}


def test_each_wire_name_is_written_once() -> None:
    """No module but storage_keys.py spells a storage-credential key or an S3 setting beside it (messages
    and docs may name it inside longer text). `storage-refresh-token` is left out: it is also a probe's
    and a strategy's name."""
    names = {v for k, v in vars(storage_keys).items() if k.isupper() and k != "STORAGE_REFRESH_TOKEN" and isinstance(v, str)}
    assert all((PACKAGE / path).is_file() for path in OTHER_WIRES)
    modules = [p for p in sorted(PACKAGE.rglob("*.py")) if p.name != "storage_keys.py" and str(p.relative_to(PACKAGE)) not in OTHER_WIRES]
    offenders = [f"{p.relative_to(PACKAGE)}: {s!r}" for p in modules for s in _code_strings(p) if s in names]
    assert not offenders, "use pyspark_catalog_ext.catalog.storage_keys (or pyiceberg.io): " + ", ".join(offenders)


def test_expiry_ms_reads_what_every_reader_read() -> None:
    assert [expiry_ms(v) for v in ("1700000000000", " 12 ", "", "  ", None, "soon", "1.5")] == [
        1700000000000, 12, None, None, None, None, None]
    assert stated_expiry_s({"s3.session-token-expires-at-ms": "9000", f"adls.sas-token-expires-at-ms.{H1}": "4000",
                            "gcs.oauth2.token-expires-at": "x"}) == 4.0
    assert stated_expiry_s({}) == float("inf")


def test_store_tokens_are_adls_by_host_then_gcs() -> None:
    config = {f"adls.sas-token.{H2}": "sas2", f"adls.sas-token.{H1}": "sas1", f"adls.sas-token-expires-at-ms.{H1}": "5000",
              "adls.sas-token.empty.host": "", "gcs.oauth2.token": "gtok", "gcs.oauth2.token-expires-at": "7000"}
    tokens = store_tokens(config)
    assert [(t.store, t.host, t.token, t.expires_at_ms) for t in tokens] == [
        ("adls", H1, "sas1", 5000), ("adls", H2, "sas2", None), ("gcs", None, "gtok", 7000)]
    assert "sas1" not in repr(tokens) and "gtok" not in repr(tokens)
    assert credential_identities(config) == {(f"adls:{H1}", "sas1", "5000"), (f"adls:{H2}", "sas2", ""), ("gcs", "gtok", "7000")}


def test_the_doctor_reads_expiries_as_the_refresher_does() -> None:
    body = {"config": {"gcs.oauth2.token": "g", "gcs.oauth2.token-expires-at": "bad"},
            "storage-credentials": [{"prefix": "abfss://c@" + H1, "config": {f"adls.sas-token.{H1}": "s",
                                                                            f"adls.sas-token-expires-at-ms.{H1}": "123"},
                                     "storage-refresh-token": "rt"}]}
    creds = store_credentials(body)
    assert [(c.store, c.source, c.host, c.expires_at_ms, c.refresh_token) for c in creds] == [
        ("adls", "storage-credentials", H1, 123, "rt"), ("gcs", "config", None, None, None)]
    s3 = VendedCredential(None, "config", {"s3.access-key-id": "AK", "s3.session-token-expires-at-ms": "2000"})
    assert (s3.access_key_id, s3.expires_at_ms) == ("AK", 2000)
    assert VendedCredential(None, "config", {"s3.session-token-expires-at-ms": ""}).expires_at_ms is None
