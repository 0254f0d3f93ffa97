"""`spark-conf --format duckdb` and `--format trino`: the same catalog connection for other engines,
with the same trust rules: the secret read from the environment or a file and masked unless asked
for, and no URL in the output but the ones the user gave (or the profile derives from them: the
OAuth2 token endpoint under the catalog URI). The lakehouse is a real catalog whose answers carry
URLs of its own choosing (its S3 endpoint in every table's config): none of them may appear.
The DuckDB statements are also fed to a real DuckDB, which must connect and read through them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import assert_one_line_error, run_cli
from tests.lakehouse_rest import Rest

URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"]+", re.I)
FORMATS = ("duckdb", "trino")


def _args(lakehouse, fmt: str, *extra: str) -> list[str]:
    return ["spark-conf", "--format", fmt, "--profile", "local", "--uri", lakehouse.info.iceberg_uri, *extra]


def _given(lakehouse) -> set[str]:
    uri = lakehouse.info.iceberg_uri.rstrip("/")
    return {uri, uri + "/v1/oauth/tokens"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_secret_from_env_is_masked_and_only_given_urls_appear(lakehouse, fmt: str) -> None:
    client_secret = lakehouse.info.credential.split(":", 1)[1]
    proc = run_cli(*_args(lakehouse, fmt, "--credential-env", "PCE_TEST_CRED"), env={"PCE_TEST_CRED": lakehouse.info.credential})
    assert proc.returncode == 0, proc.stderr
    assert client_secret not in proc.stdout + proc.stderr
    assert "***" in proc.stdout and "--show-secrets" in proc.stderr
    urls = set(URL.findall(proc.stdout))
    assert urls and urls <= _given(lakehouse), urls
    assert lakehouse.info.s3_endpoint not in proc.stdout  # the URL the catalog vends with every table


@pytest.mark.parametrize("fmt", FORMATS)
def test_show_secrets_prints_the_secret_from_a_file(lakehouse, fmt: str, tmp_path: Path) -> None:
    client_secret = lakehouse.info.credential.split(":", 1)[1]
    (tmp_path / "cred").write_text(lakehouse.info.credential + "\n")
    proc = run_cli(*_args(lakehouse, fmt, "--credential-file", str(tmp_path / "cred"), "--show-secrets"))
    assert proc.returncode == 0, proc.stderr
    assert client_secret in proc.stdout and "***" not in proc.stdout
    assert set(URL.findall(proc.stdout)) <= _given(lakehouse)


@pytest.mark.parametrize("fmt", FORMATS)
def test_remote_signing_is_refused_with_the_engines_reason(lakehouse, fmt: str) -> None:
    proc = run_cli(*_args(lakehouse, fmt, "--credential-env", "PCE_TEST_CRED", "--delegation", "remote-signing"),
                   env={"PCE_TEST_CRED": lakehouse.info.credential})
    assert_one_line_error(proc, "remote-signing", "vended credentials")


def test_duckdb_statements_fed_to_duckdb_connect_and_read(lakehouse) -> None:
    """The printed statements, run by a real DuckDB (its extensions LOADed from the [duckdb] extra),
    attach the catalog and read a table written through the catalog's REST API."""
    duckdb = pytest.importorskip("duckdb", reason="DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    from pyspark_catalog_ext.clients.duckdb import EXTENSIONS, extension_file

    rest = Rest(lakehouse.info)
    ns = rest.namespace("duckconf")
    assert rest.create(ns, "t").status_code == 200
    proc = run_cli(*_args(lakehouse, "duckdb", "--credential-env", "PCE_TEST_CRED", "--show-secrets", "--catalog", "conflake"),
                   env={"PCE_TEST_CRED": lakehouse.info.credential})
    assert proc.returncode == 0, proc.stderr
    db = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
    try:
        for name in EXTENSIONS:
            db.execute(f"LOAD '{extension_file(name)}'")
        for statement in proc.stdout.split(";\n"):
            if statement.strip():
                db.execute(statement)
        assert db.execute(f"SELECT count(*) FROM conflake.{ns}.t").fetchone() == (0,)
        tables = {(r[1], r[2]) for r in db.execute("SHOW ALL TABLES").fetchall() if r[0] == "conflake"}
        assert (ns, "t") in tables, tables
    finally:
        db.close()


def test_duckdb_connect_failure_names_no_secret(lakehouse) -> None:
    """A refused login (a wrong client secret): one CatalogError line, without the secret DuckDB was given."""
    pytest.importorskip("duckdb", reason="DuckDB is not installed: pip install 'pyspark-catalog-ext[duckdb]'")
    from pyspark_catalog_ext.clients.duckdb import duckdb_connect
    from pyspark_catalog_ext.errors import CatalogError

    wrong = "wrong-secret-" + "x" * 12
    client_id = lakehouse.info.credential.split(":", 1)[0]
    with pytest.raises(CatalogError) as err:
        duckdb_connect(lakehouse.connection(credential=f"{client_id}:{wrong}"))
    assert wrong not in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_duckdb_takes_the_users_s3_endpoint_and_region(lakehouse) -> None:
    """A catalog may vend keys without an endpoint or a region (Iceberg's REST fixture): DuckDB then
    needs the user's, as session-wide defaults (a cursor is a connection of its own) that a vended
    endpoint still overrides, and the ATTACH's DEFAULT_REGION. Both come from what the user gave."""
    from pyspark_catalog_ext.clients.duckdb import duckdb_statements

    conn = lakehouse.connection(s3_endpoint="http://127.0.0.1:9000", region="eu-west-3")
    statements = duckdb_statements(conn)
    assert statements[:3] == ["SET GLOBAL s3_endpoint = '127.0.0.1:9000'", "SET GLOBAL s3_use_ssl = false",
                              f"SET GLOBAL s3_url_style = '{'path' if conn.path_style else 'vhost'}'"]
    assert "DEFAULT_REGION 'eu-west-3'" in statements[-1] and "READ_ONLY" not in statements[-1]
    assert "READ_ONLY false" in duckdb_statements(conn, read_only=False)[-1]
    assert not [s for s in duckdb_statements(lakehouse.connection()) if s.startswith("SET")]
