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
    "sent bearer eyJSECRET", "bearer token.eyJSECRET", "bearer tokeneyJSECRET",
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


# ---- forms that used to slip through (Hadoop/cloud keys, XML bodies, escaped JSON, bare tokens)
HADOOP_SECRET_KEYS = ["spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key", "fs.s3a.secret.key",
                      "spark.hadoop.fs.gs.auth.service.account.private.key",
                      "spark.hadoop.fs.azure.account.key.myaccount.dfs.core.windows.net",
                      "fs.azure.account.key.myaccount.blob.core.windows.net", "spark.hadoop.fs.s3a.session.token"]
HADOOP_PLAIN_KEYS = ["spark.hadoop.fs.s3a.endpoint", "spark.hadoop.fs.azure.account.auth.type",
                     "spark.hadoop.fs.azure.account.keyprovider.myaccount", "spark.hadoop.fs.s3a.path.style.access",
                     "spark.hadoop.fs.gs.auth.service.account.enable"]


@pytest.mark.parametrize("key", HADOOP_SECRET_KEYS)
def test_hadoop_and_cloud_secret_keys_are_secret_and_stay_off_argv(key: str) -> None:
    import re

    from pyspark_catalog_ext.secret_keys import REDACTION_REGEX
    from pyspark_catalog_ext.spark.session import launch_settings

    value = "s3cr3t-value-123"
    assert is_secret_key(key)
    assert launch_settings({key: value, "spark.master": "local[1]"}) == [("spark.master", "local[1]")]
    assert value not in repr(CatalogSparkConf({key: value}))
    assert re.search(REDACTION_REGEX, key), "Spark must hide it in its UI too"


@pytest.mark.parametrize("key", HADOOP_PLAIN_KEYS)
def test_hadoop_plain_keys_stay_on_argv(key: str) -> None:
    from pyspark_catalog_ext.spark.session import launch_settings

    assert not is_secret_key(key)
    assert launch_settings({key: "v"}) == [(key, "v")]


SECRET = "Zq9SECRETvalue77"
S3_ERROR = ("<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist"
            f"</Message><AWSAccessKeyId>{SECRET}</AWSAccessKeyId><RequestId>1</RequestId></Error>")
STS_ANSWER = (f"<AssumeRoleResult><Credentials><AccessKeyId>{SECRET}</AccessKeyId><SecretAccessKey>{SECRET}"
              f"</SecretAccessKey><SessionToken>{SECRET}//+=</SessionToken><Expiration>2026-11-26T06:00:00Z"
              "</Expiration></Credentials></AssumeRoleResult>")
SIGNATURE_ERROR = f"<Error><Code>SignatureDoesNotMatch</Code><SignatureProvided>{SECRET}</SignatureProvided></Error>"


@pytest.mark.parametrize("text", [
    S3_ERROR, STS_ANSWER, SIGNATURE_ERROR, f"<sts:SecretAccessKey>{SECRET}</sts:SecretAccessKey>",
    f'{{\\"token\\": \\"{SECRET}\\"}}', f'body {{"message": "{{\\"secretAccessKey\\":\\"{SECRET}\\"}}"}}',
    f"secret_key: {SECRET}", f"secret-key={SECRET}", f"fs.s3a.secret.key={SECRET}", f"account_key: {SECRET}",
    f"invalid token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.{SECRET}",
    f"refused eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJleHAiOjE3MDB9.{SECRET}-_x and more",
    "got Basic YWxpY2U6WnE5U0VDUkVUdmFsdWU3Nw== from the proxy",
])
def test_secrets_in_xml_escaped_json_and_bare_tokens_are_redacted(text: str) -> None:
    import base64

    redacted = redact(text)
    assert SECRET not in redacted, redacted
    assert base64.b64encode(f"alice:{SECRET}".encode()).decode() not in redacted, redacted
    assert "***" in redacted


@pytest.mark.parametrize("text", [
    "<Error><Code>NoSuchKey</Code><Key>db/t/data/00000-0.parquet</Key></Error>", "Basic auth is not enabled",
    "basic compaction of db.t", "Basic auth", "the token eyJ is not a JWT", "<Expiration>2026-11-26</Expiration>",
    "profile 'r2' authenticates with a bearer token (pass --token)", "OAuth2 or bearer tokens, not sigv4 auth",
])
def test_redaction_keeps_s3_keys_and_prose(text: str) -> None:
    assert redact(text) == text


def test_redaction_of_random_secrets_in_every_form() -> None:
    """A property-style check: random secret values, wrapped in every form, never survive redact()."""
    import base64
    import random
    import string

    rng = random.Random(20261126)
    alphabet = string.ascii_letters + string.digits + "+/_-"
    forms = ["<SecretAccessKey>{}</SecretAccessKey>", "<SessionToken>{}</SessionToken>", '{{\\"token\\": \\"{}\\"}}',
             "secret_key: {}", '"secret-access-key": "{}"', "Authorization: Bearer {}", "token={}&a=1",
             "X-Api-Key: {}", "<AccessKeyId>{}</AccessKeyId>"]
    for _ in range(300):
        secret = rng.choice(string.ascii_letters) + "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 40)))
        form = rng.choice(forms)
        text = f"{rng.choice(['', 'HTTP 403: ', 'S3Exception '])}{form.format(secret)}{rng.choice(['', ' (retry)', '; x'])}"
        assert secret not in redact(text), (form, text, redact(text))
        basic = base64.b64encode(f"user:{secret}".encode()).decode()
        assert basic not in redact(f"sent Basic {basic} upstream")


@pytest.mark.parametrize("name", ["storageRefreshToken", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token",
                                  "api_key", "sig", "client_secret", "password"])
def test_secret_query_parameters_come_from_the_same_module(name: str) -> None:
    from pyspark_catalog_ext.catalog.exchanges import mask_query
    from pyspark_catalog_ext.secret_keys import is_secret_param

    assert is_secret_param(name)
    assert mask_query(f"{name}=v4lue&pageSize=10") == f"?{name}=***&pageSize=10"


@pytest.mark.parametrize("name", ["pageSize", "warehouse", "planId", "namespace"])
def test_plain_query_parameters_are_shown(name: str) -> None:
    from pyspark_catalog_ext.secret_keys import is_secret_param

    assert not is_secret_param(name)


@pytest.mark.parametrize("name", ["sig", "X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "storageRefreshToken",
                                  "access_token", "api_key", "accountKey", "sessionKey", "customerKeyId", "client_secret", "code", "planId", "x-id", "prefix",
                                  "warehouse", "page-token"])
def test_redact_masks_a_query_parameter_exactly_when_the_one_predicate_calls_it_secret(name):
    from pyspark_catalog_ext.secret_keys import is_secret_param

    text = redact(f"GET https://catalog.example.com/v1/t?{name}=VALUE123&after=1")
    assert ("VALUE123" not in text) == (is_secret_param(name) or name == "code"), text
    assert text.endswith("&after=1")


# ---- forms found in review: JSON lists, PEM keys, ODBC passwords, userinfo without a colon or with a `/`
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Zq9SECRETvalue77"
SERVICE_ACCOUNT = ('{"type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": '
                   f'"-----BEGIN PRIVATE KEY-----\\n{PEM_BODY[:40]}\\n{PEM_BODY[40:]}\\n-----END PRIVATE KEY-----\\n", '
                   '"client_email": "sa@p.iam.gserviceaccount.com"}')


@pytest.mark.parametrize("text", [
    f'{{"uri": "https://s3/x", "headers": {{"X-Amz-Security-Token": ["{SECRET}"], "Host": ["s3"]}}}}',
    f'{{"headers": {{"Authorization": ["AWS4-HMAC-SHA256 Credential=AKIA/x, SignedHeaders=host, Signature={SECRET}"]}}}}',
    f'{{"x-amz-security-token": ["{SECRET}-1", "{SECRET}-2"]}}', f'{{\\"X-Amz-Security-Token\\": [\\"{SECRET}\\"]}}',
    SERVICE_ACCOUNT, f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
    f"cut short: -----BEGIN ENCRYPTED PRIVATE KEY----- {PEM_BODY}",
    f"Driver=x;Server=db;UID=u;PWD={SECRET};", f"pwd={SECRET}&db=1", f"passwd: {SECRET}",
    f"git clone https://{SECRET}@github.com/org/repo", f"https://user:pa/{SECRET}@host/path",
])
def test_secrets_in_lists_pem_keys_odbc_and_userinfo_are_redacted(text: str) -> None:
    redacted = redact(text)
    assert SECRET not in redacted and PEM_BODY[:40] not in redacted and PEM_BODY[40:] not in redacted, redacted
    assert "***" in redacted


@pytest.mark.parametrize("text", ['{"headers": {"Host": ["s3.example.com"], "X-Amz-Date": ["20260101T000000Z"]}}',
                                  "http://127.0.0.1:8181/v1/ns/tables/a@b", "s3://bucket/key@x", "-----BEGIN CERTIFICATE-----",
                                  "the working directory (pwd) is /tmp"])
def test_lists_urls_and_certificates_without_secrets_are_kept(text: str) -> None:
    assert redact(text) == text


def test_configured_secrets_outlive_any_number_of_refreshed_ones() -> None:
    """A catalog's client secret is registered once, refreshed keys every few minutes: the secret
    must stay masked in py4j's log however many keys came after it."""
    import logging
    import secrets as random

    client_secret = "cs-" + random.token_hex(12)
    logsafety.mask_conf_secrets({"spark.sql.catalog.lake.credential": f"client:{client_secret}"})
    logsafety.MASK.add(f"refreshed-{i}-{random.token_hex(6)}" for i in range(logsafety._MAX_SECRETS + 10))
    record = logging.LogRecord("py4j.clientserver", logging.DEBUG, __file__, 1, "Answer received: !ys%s", (client_secret,), None)
    assert logsafety.MASK.filter(record) and client_secret not in record.getMessage()


def test_past_its_bound_of_configured_secrets_the_log_mask_drops_every_record() -> None:
    import logging

    mask = logsafety.SecretMaskingFilter()
    mask.pin(f"configured-{i:06d}" for i in range(logsafety._MAX_PINNED))
    record = logging.LogRecord("py4j", logging.DEBUG, __file__, 1, "a configured-000000 b", (), None)
    assert mask.filter(record) and record.getMessage() == "a *** b"
    mask.pin(["one-more-configured-secret"])  # forgetting an older one could leak it: fail closed
    assert not mask.filter(logging.LogRecord("py4j", logging.DEBUG, __file__, 1, "one-more-configured-secret", (), None))


# ---- forms found in the trust review: quoted values with spaces, `@` in a password, a SAS without
# its `?`, a bare Google token, YAML lists, Azure's subscription key header
@pytest.mark.parametrize("text", [
    f'password="a b {SECRET}"', f"token: 'x {SECRET} y'", f'{{"secret-access-key": "has space {SECRET}"}}',
    f"https://user:p@{SECRET}@host.example/x", f"https://user:p@ss{SECRET}@host.example",
    f"sig={SECRET}&se=2026-01-01", f"SAS was sig={SECRET}", f"refused ya29.{SECRET}-_x",
    f"tokens:\n  - {SECRET}\n  - b{SECRET}\nother: 1", f"client-secret:\n- {SECRET}\n",
    f"Ocp-Apim-Subscription-Key: {SECRET}",
])
def test_secret_shapes_from_the_trust_review_are_redacted(text: str) -> None:
    redacted = redact(text)
    assert SECRET not in redacted and "***" in redacted, redacted


def test_every_secret_the_process_holds_is_masked_by_value_in_any_encoding() -> None:
    """A vended secret with characters URLs and JSON escape: masked raw, percent-encoded (as a
    form body or query carries it) and JSON-escaped, in messages and in any log line of the
    loggers that see requests; plain text around it is kept."""
    import json
    import logging
    import secrets as random
    from urllib.parse import quote, quote_plus

    vended = "v/" + random.token_urlsafe(12) + "+x=\"q\"=="
    logsafety.register([vended])
    logsafety.install()
    forms = [vended, quote(vended, safe=""), quote_plus(vended), json.dumps(vended)[1:-1]]
    for form in forms:
        assert redact(f"answer body: {form} (kept)") == "answer body: *** (kept)", form
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    for name in ("urllib3.connectionpool", "pyspark_catalog_ext.pyiceberg", "botocore.endpoint"):
        logger = logging.getLogger(name)
        handler, level = Keep(), logger.level
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        try:
            logger.debug("sent %s", forms[1])
        finally:
            logger.removeHandler(handler)
            logger.setLevel(level)
    assert seen and all(vended not in m and forms[1] not in m for m in seen), seen
