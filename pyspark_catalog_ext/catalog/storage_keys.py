"""Iceberg's names for vended storage credentials, their expiries and refresh: declared once here,
the lowest layer that reads them (the catalog's own table-answer settings), for every concern above.

`refresh/vended.py` says which of them a renewal hands out and parses what they state; modules that
import PyIceberg use its `pyiceberg.io` constants where it has the same name (tests/unit/catalog/test_storage_keys.py
keeps the two equal).
"""

from __future__ import annotations

__all__ = ["ADLS_CONNECTION", "ADLS_REFRESH_ENDPOINT", "ADLS_SAS", "ADLS_SAS_EXPIRY", "GCS_REFRESH_ENDPOINT",
           "GCS_SERVICE_HOST", "GCS_TOKEN", "GCS_TOKEN_EXPIRY", "REFRESH_ENDPOINT", "S3_ACCESS_KEY_ID", "S3_EXPIRY",
           "S3_SECRET_ACCESS_KEY", "S3_SESSION_TOKEN", "STORAGE_REFRESH_TOKEN",
           "CLIENT_REGION", "S3_CONNECT_TIMEOUT", "S3_ENDPOINT", "S3_FORCE_VIRTUAL_ADDRESSING", "S3_PATH_STYLE_ACCESS", "S3_PROXY_URI", "S3_REGION", "S3_REMOTE_SIGNING_ENABLED", "S3_REQUEST_TIMEOUT",
           "S3_SIGNER_ENDPOINT", "S3_SIGNER_URI", "SIGNER_ENDPOINT", "SIGNER_URI"]

# S3
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_EXPIRY = "s3.session-token-expires-at-ms"
# S3 settings that come with them: where the keys (or signatures) are used, and how
S3_ENDPOINT = "s3.endpoint"
S3_REGION = "s3.region"
CLIENT_REGION = "client.region"  # Iceberg's region for every AWS client, s3.region's fallback
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_FORCE_VIRTUAL_ADDRESSING = "s3.force-virtual-addressing"  # PyIceberg's opposite of path style
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_PROXY_URI = "s3.proxy-uri"
S3_REMOTE_SIGNING_ENABLED = "s3.remote-signing-enabled"
S3_SIGNER_URI = "s3.signer.uri"
S3_SIGNER_ENDPOINT = "s3.signer.endpoint"
SIGNER_URI = "signer.uri"  # the signer's base URL and endpoint where a catalog names them without the s3. prefix
SIGNER_ENDPOINT = "signer.endpoint"
# GCS
GCS_TOKEN = "gcs.oauth2.token"
GCS_TOKEN_EXPIRY = "gcs.oauth2.token-expires-at"  # epoch ms
GCS_SERVICE_HOST = "gcs.service.host"
# ADLS: one of each per storage-account host (the key + <host>)
ADLS_SAS = "adls.sas-token."
ADLS_SAS_EXPIRY = "adls.sas-token-expires-at-ms."
ADLS_CONNECTION = "adls.connection-string."  # the account's blob endpoint
# Refresh: a store's own endpoint, the generic one Iceberg falls back to, and a storage credential's
# proposed refresh token (a field of each `storage-credentials` entry, beside `prefix` and `config`)
ADLS_REFRESH_ENDPOINT = "adls.refresh-credentials-endpoint"
GCS_REFRESH_ENDPOINT = "gcs.oauth2.refresh-credentials-endpoint"
REFRESH_ENDPOINT = "client.refresh-credentials-endpoint"
STORAGE_REFRESH_TOKEN = "storage-refresh-token"
