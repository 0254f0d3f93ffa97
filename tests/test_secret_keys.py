"""One definition of "what is a secret" (secret_keys), used by conf masking, the py4j log mask,
the doctor's secret bag and free-text redaction alike."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.errors import redact
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark_conf import CatalogSparkConf

SECRET_KEYS = ["spark.sql.catalog.lake.credential", "spark.sql.catalog.lake.token", "s3.secret-access-key",
               "s3.access-key-id", "s3.session-token", "storage-refresh-token", "access_token", "adls.sas-token",
               "spark.sql.catalog.lake.header.Authorization", "client.refresh-credentials-token"]
PLAIN_KEYS = ["spark.sql.catalog.lake.uri", "spark.sql.catalog.lake.oauth2-server-uri", "rest.auth.type",
              "token-expires-in-ms", "s3.endpoint", "spark.sql.catalog.lake.scope"]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_secret_keys_are_secret_everywhere(key: str) -> None:
    value = "s3cr3t-value-123"
    assert is_secret_key(key)
    assert value not in repr(CatalogSparkConf({key: value}))
    assert value in logsafety.secret_conf_values({key: value})


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_plain_keys_are_shown(key: str) -> None:
    assert not is_secret_key(key)
    assert "shown-value" in repr(CatalogSparkConf({key: "shown-value"}))
    assert logsafety.secret_conf_values({key: "shown-value"}) == []


@pytest.mark.parametrize("text", ['{"secretAccessKey": "AKSECRET99"}', "token=AKSECRET99&x=1", "session_token: AKSECRET99",
                                  "Authorization: AKSECRET99", '"storageRefreshToken":"AKSECRET99"', "access-key-id=AKSECRET99"])
def test_free_text_redaction_uses_the_same_words(text: str) -> None:
    assert "AKSECRET99" not in redact(text), redact(text)


def test_log_mask_is_bounded_and_keeps_the_newest() -> None:
    import logging

    mask = logsafety.SecretMaskingFilter()
    mask.add([f"secret-{i:06d}" for i in range(logsafety._MAX_SECRETS + 10)])
    record = logging.LogRecord("py4j", logging.DEBUG, __file__, 1, "a secret-000000 b secret-%06d c",
                               (logsafety._MAX_SECRETS + 9,), None)
    mask.filter(record)
    assert record.getMessage() == "a secret-000000 b *** c"
