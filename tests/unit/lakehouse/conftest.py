"""Fixtures shared by the lakehouse's tests."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext.lakehouse.signer import SigningCatalogProxy


@pytest.fixture(scope="module")
def signer(lakehouse):
    """The embedded lakehouse's signer, in-process in front of the session's SeaweedFS."""
    proxy = SigningCatalogProxy(lakehouse.info.iceberg_uri, lakehouse.info.s3_endpoint, lakehouse.info.access_key,
                                lakehouse.info.secret_key).start()
    yield proxy
    proxy.stop()
