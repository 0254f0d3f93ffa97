"""Tell "S3 says these keys are no longer valid" apart from every other S3 refusal.

Only ExpiredToken, InvalidAccessKeyId, InvalidToken and TokenRefreshRequired (403 or 400) mean the
keys died. The code is read, never guessed: s3fs keeps botocore's `ClientError` (its `Error.Code`
decides); PyArrow says only "ACCESS_DENIED", so one ranged GET (`Range: bytes=0-0`) of the same key
with the same keys asks S3, and a codeless answer is not expiry. The probe's `Date` header also
tells the S3 clock (`S3Prober.last_skew_s`).

Java twin: `io.catalogext.shim.refresh.RejectionLedger`.
Why: docs/pyiceberg.md, section 'PyIceberg jobs' ("Keys that die early").
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from cachetools import LRUCache

from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
)
from pyspark_catalog_ext.errors import GcsTokenRefused
from pyspark_catalog_ext.refresh.rules import EXPIRY_CODES, EXPIRY_STATUSES

__all__ = ["EXPIRY_CODES", "Rejection", "S3Prober", "rejection_of", "sas_expiry_s", "skew_from_date", "store_rejection"]

_AUTH_STATUSES = EXPIRY_STATUSES  # 403, or 400 from some S3 implementations
# PyArrow's AWS SDK errors can hide an expired key: a refusal without its code, or, for a ranged GET
# refused mid-scan, "INTERNAL_FAILURE ... Failed to flush response stream" (the SDK fails writing the
# 403's XML into the buffer sized for the range). Every one but "not found" is probed: S3 decides.
_PYARROW_AWS_ERROR = re.compile(r"AWS Error (?!NO_SUCH_|RESOURCE_NOT_FOUND)[A-Z_]+")


@dataclass(frozen=True)
class Rejection:
    """S3 refused the keys: `code` as S3 sent it (None: it sent none), `probed`: learned by a ranged GET."""

    code: str | None
    status: int | None
    probed: bool = False
    store_expired: bool | None = None  # GCS or ADLS: decided by `store_rejection`, not by S3's codes

    @property
    def expired(self) -> bool:
        if self.store_expired is not None:
            return self.store_expired
        return self.code in EXPIRY_CODES and (self.status is None or self.status in _AUTH_STATUSES)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then its cause (or else context), and so on, each once: the clients wrap the store's own
    error (s3fs, adlfs, gcsfs translate it into OSError/PermissionError and keep it as the cause)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _client_error(exc: BaseException) -> Any | None:
    """botocore's ClientError in `exc`'s cause/context chain (s3fs translates it to PermissionError)."""
    for cur in _chain(exc):
        response = getattr(cur, "response", None)
        if isinstance(response, Mapping) and "Error" in response:
            return cur
    return None


def _parsed(exc: Any) -> tuple[str | None, int | None]:
    response = exc.response
    code = (response.get("Error") or {}).get("Code")
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code = None if not code or str(code).isdigit() else str(code)  # botocore puts "403" there for a bodiless HEAD
    return code, int(status) if status else None


def rejection_of(exc: BaseException) -> Rejection | None:
    """What the FileIO's error says, without a request: a Rejection with the code when S3 sent one
    (`expired` decides), a codeless Rejection when S3 may have refused the keys without saying why
    (probe it), or None when it is certainly not a refusal of the keys."""
    client_error = _client_error(exc)
    if client_error is not None:
        code, status = _parsed(client_error)
        if code is not None:
            return Rejection(code, status)
        return Rejection(None, status) if status in _AUTH_STATUSES else None
    if isinstance(exc, OSError) and _PYARROW_AWS_ERROR.search(str(exc)):
        said = re.search(r"HTTP status (\d{3})", str(exc))
        return Rejection(None, int(said.group(1)) if said else None)
    return None


# Azure's answer to a SAS it no longer takes (an expired `se=`) is 403 AuthenticationFailed; Azurite
# answers it, and every other SAS refusal, 403 AuthorizationFailure, which on Azure means a scope refusal.
_AZURE_EXPIRED = "AuthenticationFailed"
_AZURE_AMBIGUOUS = "AuthorizationFailure"
_AZURE_TEXT = re.compile(r"Azure Error: \[(\w+)\] (\d{3})")  # PyArrow's AzureFileSystem
_GCS_TEXT = re.compile(r"google::cloud::Status\((UNAUTHENTICATED|PERMISSION_DENIED)")  # PyArrow's GcsFileSystem


def sas_expiry_s(sas_token: str) -> float | None:
    """The expiry a SAS token states itself (`se=`, UTC), epoch seconds; None if it states none."""
    from datetime import datetime, timezone
    from urllib.parse import parse_qs

    raw = next(iter(parse_qs(sas_token.lstrip("?")).get("se") or []), None)
    if not raw:
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%MZ", "%Y-%m-%d"):
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    return None


def _azure_error(exc: BaseException) -> tuple[str, int] | None:
    for cur in _chain(exc):
        status, code = getattr(cur, "status_code", None), getattr(cur, "error_code", None)
        if isinstance(status, int) and code:  # azure-core's HttpResponseError (adlfs keeps it as the cause)
            return str(getattr(code, "value", code)), status  # azure-storage's StorageErrorCode is an enum
        said = _AZURE_TEXT.search(str(cur)) if isinstance(cur, OSError) else None
        if said:
            return said.group(1), int(said.group(2))
    return None


def _gcs_status(exc: BaseException) -> int | None:
    for cur in _chain(exc):
        code = getattr(cur, "code", None)
        if isinstance(cur, GcsTokenRefused) or (type(cur).__name__ == "HttpError" and isinstance(code, int)):  # gcsfs's error: 401 after its own retries
            return code
        if isinstance(cur, OSError) and str(cur).startswith("Forbidden: "):  # gcsfs raises a 403 so
            return 403
        said = _GCS_TEXT.search(str(cur)) if isinstance(cur, OSError) else None
        if said:
            return 401 if said.group(1) == "UNAUTHENTICATED" else 403
    return None


def store_rejection(exc: BaseException, location: str, sas_token: str | None, now_s: float) -> Rejection | None:
    """GCS or ADLS refusing the token a request carried, None when `exc` is no refusal of it.

    GCS: 401 means the token is no longer valid (expired, revoked): renew; 403 is a scope refusal
    (another bucket or prefix). ADLS: 403 AuthenticationFailed (Azure's answer to an expired SAS):
    renew; 403 AuthorizationFailure is a scope refusal on Azure, and Azurite's answer to every refused
    SAS: it counts as expiry only when the SAS the request carried states an expiry (`se=`) now past.
    Anything else is no expiry: raised as it came, never retried."""
    scheme = location.split("://", 1)[0]
    if scheme in ("gs", "gcs"):
        status = _gcs_status(exc)
        if status in (401, 403):
            return Rejection("Unauthorized" if status == 401 else "Forbidden", status, store_expired=status == 401)
        return None
    if scheme in ("abfs", "abfss", "wasb", "wasbs"):
        said = _azure_error(exc)
        if said is None or said[1] != 403:
            return None
        code, status = said
        stated = sas_expiry_s(sas_token) if sas_token else None
        expired = code == _AZURE_EXPIRED or (code == _AZURE_AMBIGUOUS and stated is not None and stated <= now_s)
        return Rejection(code, status, store_expired=expired)
    return None


def skew_from_date(date_header: str | None, local_s: float) -> float | None:
    """Server clock minus local clock, in seconds, from an HTTP `Date` header (1 s resolution)."""
    if not date_header:
        return None
    try:
        return parsedate_to_datetime(date_header).timestamp() - local_s
    except (TypeError, ValueError, IndexError):
        return None


def _split(location: str) -> tuple[str, str]:
    parts = urlsplit(location)
    return parts.netloc, parts.path.lstrip("/")


class S3Prober:
    """One ranged GET per question, with the keys of the refused request; boto3 clients are kept for
    the last few key sets only, all built in one botocore session: in a session of its own each
    client parsed the S3 model again (~50 ms with the GIL held, seconds under load), a stall of the
    whole process in the middle of a rejection wave, once per renewed key set."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clients: LRUCache[tuple[str, str], Any] = LRUCache(maxsize=8)  # (access key, endpoint) -> client
        self._session: Any = None  # boto3 session, made on the first probe; clients are made under the lock
        self.last_skew_s: float | None = None
        self.probes = 0

    def _client_for(self, props: Mapping[str, Any]) -> Any:
        akid = str(props.get(S3_ACCESS_KEY_ID) or "")
        key = (akid, str(props.get(S3_ENDPOINT) or ""))
        with self._lock:
            client = self._clients.get(key)
        if client is not None:
            return client
        import boto3

        with self._lock:  # a botocore session is not safe to build clients in from two threads at once
            client = self._clients.get(key)
            if client is None:
                if self._session is None:
                    self._session = boto3.session.Session()
                client = self._clients[key] = self._client(self._session, akid, props)
        return client

    @staticmethod
    def _client(session: Any, akid: str, props: Mapping[str, Any]) -> Any:
        from botocore.config import Config

        path_style = str(props.get(S3_PATH_STYLE_ACCESS, "false")).lower() == "true"
        return session.client(
            "s3", endpoint_url=props.get(S3_ENDPOINT) or None,
            region_name=props.get(S3_REGION) or props.get(CLIENT_REGION) or "us-east-1",
            aws_access_key_id=akid or None, aws_secret_access_key=props.get(S3_SECRET_ACCESS_KEY) or None,
            aws_session_token=props.get(S3_SESSION_TOKEN) or None,
            # One answer is the point: botocore's own retries would only repeat the refusal.
            config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=10,
                          s3={"addressing_style": "path" if path_style else "auto"}))

    def probe(self, location: str, props: Mapping[str, Any]) -> Rejection | None:
        """Ask S3 why it refused `location` to these keys: the code of a ranged GET of the same key.
        None when the GET is not refused (the keys work) or S3 cannot be reached."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = _split(location)
        if not bucket or not key:
            return None
        self.probes += 1
        sent = time.time()
        try:
            answer = self._client_for(props).get_object(Bucket=bucket, Key=key, Range="bytes=0-0")
            answer["Body"].close()
            self._note_date(answer, sent)
            return None
        except ClientError as exc:
            self._note_date(exc.response, sent)
            code, status = _parsed(exc)
            if status in _AUTH_STATUSES:
                return Rejection(code, status, probed=True)
            return None  # 404 NoSuchKey (a write's key), 416 (an empty object): the keys were accepted
        except BotoCoreError:
            return None

    def _note_date(self, response: Mapping[str, Any], sent: float) -> None:
        headers = (response.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        skew = skew_from_date(headers.get("date"), (sent + time.time()) / 2)
        if skew is not None:
            self.last_skew_s = skew
