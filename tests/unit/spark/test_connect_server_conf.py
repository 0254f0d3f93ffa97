"""A Spark Connect server's secrets stay out of its properties file, command line and environment:
`spark-conf --format defaults` refuses to write one for a Connect server, and `connect-server`
refuses every secret source but standard input, and starts only with a private client token.
(tests/slow/test_spark_connect.py runs the server itself.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pyspark_catalog_ext.errors import ConfigError
from pyspark_catalog_ext.spark.connect_server import BINDING_ADDRESS_KEY, TOKEN_KEY, read_connect_token, server_settings
from tests.conftest import CLI, SECRET, assert_one_line_error, run_cli

CATALOG = ["--profile", "polaris", "--uri", "https://polaris.example.com/api/catalog", "--warehouse", "prod", "--jars", "none"]


def _defaults(*extra: str) -> list[str]:
    return ["spark-conf", *CATALOG, "--credential", f"client:{SECRET}", "--format", "defaults", "--show-secrets", *extra]


@pytest.mark.parametrize("marker", ["spark.connect.grpc.binding.port=15002",
                                    "spark.plugins=org.apache.spark.sql.connect.SparkConnectPlugin"])
def test_spark_conf_defaults_for_a_connect_server_refuses_to_write_the_secret(marker):
    error = assert_one_line_error(run_cli(*_defaults("--conf", marker)), "spark.sql.catalog.lake.credential",
                                  "pyspark-catalog-ext connect-server --credential-stdin", "UDF")
    assert "properties file" in error


def test_spark_conf_defaults_refuses_a_secret_setting_too_and_masking_does_not_help():
    # --conf-env keeps a header key out of argv, not out of the file; *** in a file is no way to run a server either.
    proc = run_cli("spark-conf", *CATALOG, "--token-env", "API_KEY_VAR", "--format", "defaults",
                   "--conf", "spark.connect.grpc.binding.port=15002",
                   "--conf-env", "spark.sql.catalog.lake.header.X-Api-Key=API_KEY_VAR", env={"API_KEY_VAR": SECRET})
    assert_one_line_error(proc, "spark.sql.catalog.lake.header.X-Api-Key", "connect-server")


def test_spark_conf_defaults_without_connect_or_without_secrets_still_prints():
    plain = run_cli(*_defaults())
    assert plain.returncode == 0 and f"spark.sql.catalog.lake.credential client:{SECRET}" in plain.stdout
    # Glue signs with the machine's AWS identity: no secret in the settings.
    no_secret = run_cli("spark-conf", "--profile", "glue", "--warehouse", "123456789012", "--region", "us-east-1",
                        "--jars", "none", "--format", "defaults", "--conf", "spark.connect.grpc.binding.port=15002")
    assert no_secret.returncode == 0, no_secret.stderr
    assert "spark.connect.grpc.binding.port 15002" in no_secret.stdout


def _server(tmp_path: Path, *extra: str, env: dict | None = None):
    token = tmp_path / "connect-token"
    token.write_text("t0ken\n")
    token.chmod(0o600)
    return run_cli("connect-server", *CATALOG, "--connect-token-file", str(token), *extra, env=env)


@pytest.mark.parametrize("source", [["--credential", f"client:{SECRET}"], ["--credential-env", "CRED_VAR"],
                                    ["--token-file", "/dev/null"], ["--from-pyiceberg", "prod"]])
def test_connect_server_takes_the_catalog_secret_from_stdin_only(tmp_path, source):
    proc = _server(tmp_path, *source, env={"CRED_VAR": f"client:{SECRET}"})
    assert_one_line_error(proc, "standard input only", source[0])


def test_connect_server_refuses_a_secret_setting_on_its_command_line(tmp_path):
    proc = _server(tmp_path, "--conf", f"spark.sql.catalog.lake.header.X-Api-Key={SECRET}")
    assert_one_line_error(proc, "spark.sql.catalog.lake.header.X-Api-Key", "command line", "--conf-stdin")


@pytest.mark.parametrize("flags", [["--credential-stdin"], ["--token-stdin"], ["--conf-stdin", "spark.sql.catalog.lake.header.X-Api-Key"]])
def test_connect_server_refuses_an_empty_standard_input(tmp_path, flags):
    token = tmp_path / "connect-token"
    token.write_text("t0ken\n")
    token.chmod(0o600)
    proc = subprocess.run([*CLI, "connect-server", *CATALOG, "--connect-token-file", str(token), *flags], input="",
                          capture_output=True, text=True, timeout=120)
    assert_one_line_error(proc, "standard input holds no line for", flags[0])


def test_connect_server_needs_a_private_client_token(tmp_path):
    assert_one_line_error(run_cli("connect-server", *CATALOG, "--credential-stdin"), "--connect-token-file", "--connect-token-env")
    shared = tmp_path / "token"
    shared.write_text("t0ken")
    shared.chmod(0o644)
    assert_one_line_error(run_cli("connect-server", *CATALOG, "--connect-token-file", str(shared)), "chmod 600", "644")
    assert_one_line_error(run_cli("connect-server", *CATALOG, "--connect-token-env", "UNSET_VAR", env={"UNSET_VAR": ""}),
                          "UNSET_VAR", "not set")


def test_read_connect_token_from_a_private_file_or_the_environment(tmp_path, monkeypatch):
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    token.chmod(0o600)
    assert read_connect_token(str(token), None) == "s3cret-token"
    monkeypatch.setenv("MY_CONNECT_TOKEN", "from-env")
    assert read_connect_token(None, "MY_CONNECT_TOKEN") == "from-env"
    with pytest.raises(ConfigError, match="exactly one"):
        read_connect_token(str(token), "MY_CONNECT_TOKEN")


def test_server_settings_set_the_token_and_loopback_unless_told_otherwise():
    base = {"spark.sql.catalog.lake.uri": "https://c.example.com"}
    settings = server_settings(base, token="tk", port=15010)
    assert settings[TOKEN_KEY] == "tk" and settings["spark.connect.grpc.binding.port"] == "15010"
    assert settings[BINDING_ADDRESS_KEY] == "127.0.0.1" and settings["spark.driver.bindAddress"] == "127.0.0.1"
    wide = server_settings(base, token="tk", bind="0.0.0.0")
    assert wide[BINDING_ADDRESS_KEY] == "0.0.0.0" and "spark.driver.bindAddress" not in wide
    for key in (TOKEN_KEY, BINDING_ADDRESS_KEY):
        with pytest.raises(ConfigError, match=key):
            server_settings({**base, key: "x"}, token="tk")
