"""The leak sweep's keys come from the clients' code: the scan must find the URL settings every
Iceberg release and PyIceberg are known to read, and must leave out what only looks like one."""

from __future__ import annotations

import pytest

from tests.url_keys import (
    ADLS_HOST,
    ICEBERG_RELEASES,
    iceberg_constants,
    is_url_valued,
    pyiceberg_constants,
    pyiceberg_read_keys,
    url_keys,
)


@pytest.mark.parametrize("release", ICEBERG_RELEASES)
def test_each_iceberg_release_yields_the_settings_its_clients_send_to(release: str) -> None:
    found = {key: entry for key, entry in url_keys((release,)).items()
             if any(source.startswith(f"Iceberg {release} org.apache.iceberg.") for source in entry.sources)}
    for key in ("uri", "oauth2-server-uri", "s3.endpoint", "client.refresh-credentials-endpoint", "rest.client.proxy.hostname"):
        assert key in found, f"{key} not found in Iceberg {release}: the scan of its classes is broken"
    # The S3 signer's settings moved: s3.signer.* up to 1.11, signer.* from 1.11 on.
    assert {"s3.signer.uri", "signer.uri"} & set(found) and {"s3.signer.endpoint", "signer.endpoint"} & set(found)
    assert found["rest.client.proxy.hostname"].port_key == "rest.client.proxy.port"
    assert len(iceberg_constants(release)) > 1000  # every String constant of Iceberg's own classes


def test_pyiceberg_yields_its_own_settings() -> None:
    found = url_keys(())
    assert {"uri", "oauth2-server-uri", "s3.signer.uri", "s3.endpoint", "s3.proxy-uri", "gcs.service.host"} <= set(found)
    assert found["hdfs.host"].port_key == "hdfs.port"
    assert any(name == "S3_PROXY_URI" for _, name, _ in pyiceberg_constants())


@pytest.mark.parametrize(("key", "constant", "url"), [
    ("s3.signer.uri", "S3_SIGNER_URI", True), ("gcs.service.host", "", True), ("x.y", "PROXY_ENDPOINT", True),
    ("view-endpoints-supported", "VIEW_ENDPOINTS_SUPPORTED", False), ("client.security-token", "CLIENT_SECURITY_TOKEN", False),
    ("http-client.urlconnection.socket-timeout-ms", "URLCONNECTION_SOCKET_TIMEOUT_MS", False),
])
def test_url_valued_means_a_word_that_names_a_place_to_connect_to(key: str, constant: str, url: bool) -> None:
    assert is_url_valued(key, constant) is url


def test_pyiceberg_keys_are_also_found_where_they_are_read() -> None:
    """Settings named without a URL word (an ADLS authority, a connection string) are found where
    PyIceberg's FileIOs read them; an authority goes in with its scheme, a prefix key for the sweep's account."""
    by_name = url_keys((), pyiceberg_reads=False)
    found = url_keys((), pyiceberg_reads=True)
    assert not {"adls.blob-storage-authority", "adls.connection-string", "adls.account-name"} & set(by_name)
    for key in ("adls.blob-storage-authority", "adls.dfs-storage-authority", "adls.connection-string", "adls.account-name",
                "adls.account-key", "gcs.service.host", "gcs.oauth2.token", "s3.endpoint", "s3.region", "py-io-impl"):
        assert key in found, f"{key}: not found where PyIceberg reads it"
    assert found["adls.dfs-storage-authority"].scheme_key == "adls.dfs-storage-scheme"
    assert "adls.dfs-storage-scheme" not in found  # injected with its authority only
    assert f"adls.connection-string.{ADLS_HOST}" in found
    assert any(where.endswith("reads") for where, _ in pyiceberg_read_keys())
    # Only settings: not every dict key PyIceberg's code reads (a response's fields, kwargs).
    assert not {"msg", "snapshots", "account_key"} & set(found)
