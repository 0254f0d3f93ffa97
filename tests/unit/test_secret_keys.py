"""One definition of "what is a secret" (secret_keys), used by conf masking, the py4j log mask,
the doctor's secret bag and free-text redaction alike."""

from __future__ import annotations

import pytest

from pyspark_catalog_ext import logsafety
from pyspark_catalog_ext.errors import redact
from pyspark_catalog_ext.secret_keys import is_secret_key
from pyspark_catalog_ext.spark.conf import CatalogSparkConf

SECRET_KEYS = ["spark.sql.catalog.lake.credential", "spark.sql.catalog.lake.token", "s3.secret-access-key",
               "s3.access-key-id", "s3.session-token", "storage-refresh-token", "access_token", "adls.sas-token",
               "spark.sql.catalog.lake.header.Authorization", "client.refresh-credentials-token",
               # header-carried keys, SSE keys, SAS tokens per account, other cloud tokens
               "spark.sql.catalog.lake.header.X-Api-Key", "header.x-auth-key", "header.Cookie", "header.X-Session",
               "s3.sse.key", "adls.sas-token.myaccount.dfs.core.windows.net", "gcs.oauth2.token",
               "gcs.oauth2.refresh-token", "adls.auth.shared-key.account.key", "client.private-key",
               "spark.sql.catalog.lake.rest.signing-secret"]
PLAIN_KEYS = ["spark.sql.catalog.lake.uri", "spark.sql.catalog.lake.oauth2-server-uri", "rest.auth.type",
              "token-expires-in-ms", "s3.endpoint", "spark.sql.catalog.lake.scope",
              "spark.sql.catalog.lake.header.X-Iceberg-Access-Delegation", "header.User-Agent", "s3.sse.type",
              "gcs.oauth2.token-expires-at", "adls.sas-token-expires-at-ms.myaccount", "s3.sse.key-md5-unused"]


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


@pytest.mark.parametrize("text", [
    "Authorization: Bearer eyJSECRET.x.y", "authorization=Bearer eyJSECRET", "Authorization: Basic eyJSECRET==",
    "header Authorization: bearer eyJSECRET retry", "GET /v1/x?access_token=eyJSECRET&a=1", "?token=eyJSECRET",
    "https://s3/x?X-Amz-Signature=eyJSECRET&X-Amz-Credential=AKIA/eyJSECRET", "&sig=eyJSECRET&se=2026",
    "/credentials?storageRefreshToken=eyJSECRET", "X-Api-Key: eyJSECRET", '{"Authorization": "Bearer eyJSECRET"}',
    "https://user:eyJSECRET@host/", "Proxy-Authorization: Basic eyJSECRET", "Cookie: session=eyJSECRET",
])
def test_tokens_are_redacted_in_every_form(text: str) -> None:
    # `Authorization: Bearer <t>` used to lose only the word "Bearer" and keep the token in clear.
    assert "eyJSECRET" not in redact(text), redact(text)


@pytest.mark.parametrize("text", ["commit failed: 409 Conflict for table db.t", "token-expires-in-ms is 3600000",
                                  "GET /v1/namespaces/db/tables/t?pageToken=", "Authorization failed: HTTP 401",
                                  "basic compaction of db.t", "a session-token expiring at 12:00"])
def test_redaction_keeps_plain_text(text: str) -> None:
    assert redact(text) == text


def test_spark_redaction_regex_covers_every_secret_key() -> None:
    # Spark hides a conf entry (UI, event log, spark-submit's echo) when its key matches
    # spark.redaction.regex: it must match every key the package calls a secret.
    import re

    from pyspark_catalog_ext.secret_keys import REDACTION_REGEX

    spark_regex = re.compile(REDACTION_REGEX)
    missed = [key for key in SECRET_KEYS if not spark_regex.search(f"spark.sql.catalog.lake.{key}")]
    assert not missed, missed


def test_log_mask_is_bounded_and_keeps_the_newest() -> None:
    import logging

    mask = logsafety.SecretMaskingFilter()
    mask.add([f"secret-{i:06d}" for i in range(logsafety._MAX_SECRETS + 10)])
    record = logging.LogRecord("py4j", logging.DEBUG, __file__, 1, "a secret-000000 b secret-%06d c",
                               (logsafety._MAX_SECRETS + 9,), None)
    mask.filter(record)
    assert record.getMessage() == "a secret-000000 b *** c"
