"""The leak sweep's ADLS and GCS tables, and the credentials a user and a machine hold besides the catalog's.

No emulator runs: an attacker-like loopback server stands in for the store (`StoreInjector.store`,
answering 404 to everything), which is all a client needs to send its store requests, credentials
and all. The tables are the lakehouse's own, their answers rewritten on the way (`StoreInjector`):
every `s3://` location becomes `abfss://warehouse@sweepacct.dfs.core.windows.net/...` or
`gs://sweepbucket/...`, the catalog's S3 keys are dropped, and in the `vended` mode replaced by an
ADLS SAS (`adls.sas-token.<host>`, with `adls.connection-string.<host>` naming the stand-in) or a GCS
token (`gcs.oauth2.token`, with `gcs.service.host`). In the `own` and `ambient` modes the catalog
vends nothing: the user's properties name the stand-in and hold the user's own credentials
(`own`: an account key, a GCS token), or none (`ambient`: the machine's Google ADC).

`Ambient`: the machine's identities, set only in the test's environment (monkeypatch, inherited by
the CLI's subprocesses): AWS's default chain (`AWS_ACCESS_KEY_ID`...), Azure's
(`AZURE_CLIENT_SECRET`, `AZURE_STORAGE_ACCOUNT_KEY`...), and Google ADC (`GOOGLE_APPLICATION_CREDENTIALS`
naming an authorized_user file whose `token_uri` is a loopback token server that hands out a
recognisable token). Each value, and each token the server handed out, is a credential wherever it
turns up (`secrets`)."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

from tests.servers.attacker import Attacker
from tests.servers.base import Request, Response, ThreadedServer, read_request_body, send_response_head
from tests.servers.injector import Injector
from tests.url_keys import ADLS_HOST

ADLS_ACCOUNT = ADLS_HOST.split(".", 1)[0]
ADLS_ROOT = f"abfss://warehouse@{ADLS_HOST}/"
GCS_ROOT = "gs://sweepbucket/"
PROJECT = "sweep-project"
#: store -> the modes it runs in.
STORE_MODES = {"adls": ("vended", "own"), "gcs": ("vended", "own", "ambient")}


def _secret(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


def _account_key() -> str:
    """A key an Azure client takes (base64 of 64 bytes), recognisable by its first bytes."""
    return base64.b64encode(b"sweep-user-key:" + secrets.token_bytes(49)).decode()


class StoreInjector(Injector):
    """An `Injector` whose tables are on `store` ("adls", "gcs"), reached at the stand-in `self.store`."""

    def __init__(self, upstream: str, store: str, mode: str) -> None:
        super().__init__(upstream)
        self.store_kind, self.mode = store, mode
        self.store = Attacker()
        self.vended_secret = _secret("sv=2025-01-05&sp=rwdl&sig=vended" if store == "adls" else "ya29.vended-")
        self.user_properties: dict[str, str] = {}
        self.user_secrets: list[str] = []

    def start(self) -> StoreInjector:
        self.store.start()
        endpoint = self.store.url
        if self.mode == "own" and self.store_kind == "adls":
            key = _account_key()
            authority = endpoint.split("://", 1)[1]
            self.user_properties = {
                "adls.account-name": ADLS_ACCOUNT, "adls.account-key": key,
                "adls.blob-storage-authority": authority, "adls.dfs-storage-authority": authority,
                "adls.blob-storage-scheme": "http", "adls.dfs-storage-scheme": "http",
                "adls.connection-string": f"DefaultEndpointsProtocol=http;AccountName={ADLS_ACCOUNT};AccountKey={key};"
                                          f"BlobEndpoint={endpoint}/{ADLS_ACCOUNT};"}
            self.user_secrets = [key]
        elif self.mode == "own":
            token = _secret("ya29.user-")
            expires = str(int((time.time() + 86400) * 1000))  # Arrow takes a token only with its expiry
            self.user_properties = {"gcs.oauth2.token": token, "gcs.oauth2.token-expires-at": expires,
                                    "gcs.service.host": endpoint, "gcs.project-id": PROJECT}
            self.user_secrets = [token]
        elif self.mode == "ambient":
            self.user_properties = {"gcs.service.host": endpoint, "gcs.project-id": PROJECT}
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        self.store.stop()

    def upstream_answer(self, req: Request) -> Response:
        resp = self.forward(req)
        if not resp.body.startswith(b"{") or b"s3://" not in resp.body:
            return resp
        body = json.loads(resp.body.replace(b"s3://", (ADLS_ROOT if self.store_kind == "adls" else GCS_ROOT).encode()))
        if isinstance(body.get("metadata"), dict):
            if self.mode != "vended":
                body["storage-credentials"] = []
            configs = [body.setdefault("config", {})] + [c.get("config") for c in body.get("storage-credentials") or []
                                                          if isinstance(c, dict)]
            for config in configs:
                if isinstance(config, dict):
                    for key in [k for k in config if k.startswith(("s3.", "client."))]:
                        del config[key]
                    if self.mode == "vended":
                        config.update(self._vended())
        return resp.with_json(body)

    def _vended(self) -> dict[str, str]:
        expires = str(int((time.time() + 3600) * 1000))
        if self.store_kind == "adls":
            return {f"adls.sas-token.{ADLS_HOST}": self.vended_secret, f"adls.sas-token-expires-at-ms.{ADLS_HOST}": expires,
                    f"adls.connection-string.{ADLS_HOST}": f"{self.store.url}/{ADLS_ACCOUNT}"}
        return {"gcs.oauth2.token": self.vended_secret, "gcs.oauth2.token-expires-at": expires,
                "gcs.service.host": self.store.url, "gcs.project-id": PROJECT}


class _TokenServer(ThreadedServer):
    """Google's OAuth2 token endpoint for the fake ADC file: every POST gets a fresh, recognisable token."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.issued: list[str] = []

    def handle(self, h) -> None:
        read_request_body(h)
        token = _secret("ya29.ambient-")
        with self._lock:
            self.issued.append(token)
        payload = json.dumps({"access_token": token, "expires_in": 3600, "token_type": "Bearer"}).encode()
        send_response_head(h, 200, "OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
        h.wfile.write(payload)
        h.wfile.flush()


class Ambient:
    """The machine's identities (see the module docstring): `env` to set in a test, `secrets()` to look for."""

    def __init__(self, folder: Path) -> None:
        self.tokens = _TokenServer()
        self.folder = folder
        self.env: dict[str, str] = {}

    def start(self) -> Ambient:
        self.tokens.start()
        adc = {"type": "authorized_user", "client_id": _secret("adc-client-"), "client_secret": _secret("adc-secret-"),
               "refresh_token": _secret("adc-refresh-"), "token_uri": f"{self.tokens.url}/token"}
        path = self.folder / "application_default_credentials.json"
        path.write_text(json.dumps(adc), encoding="utf-8")
        self._adc = [adc["client_secret"], adc["refresh_token"]]
        self.env = {
            "AWS_ACCESS_KEY_ID": "AKIAAMBIENT" + secrets.token_hex(5).upper(), "AWS_SECRET_ACCESS_KEY": _secret("aws-ambient-"),
            "AWS_SESSION_TOKEN": _secret("aws-ambient-session-"),
            "AZURE_CLIENT_ID": _secret("azure-client-"), "AZURE_TENANT_ID": _secret("azure-tenant-"),
            "AZURE_CLIENT_SECRET": _secret("azure-secret-"), "AZURE_STORAGE_ACCOUNT_KEY": _account_key(),
            "AZURE_STORAGE_SAS_TOKEN": _secret("sv=2025-01-05&sig=ambient"),
            "GOOGLE_APPLICATION_CREDENTIALS": str(path), "GOOGLE_CLOUD_PROJECT": PROJECT,
        }
        return self

    def stop(self) -> None:
        self.tokens.stop()

    def secrets(self) -> list[str]:
        """Every ambient credential: the env's values (ids included: an AWS key id names its key) and the tokens handed out."""
        with self.tokens._lock:
            issued = list(self.tokens.issued)
        values = [v for k, v in self.env.items() if k not in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT")]
        return [*values, *self._adc, *issued]


def user_s3_keys() -> dict[str, str]:
    """The user's own S3 keys beside a catalog that vends (a `.pyiceberg.yaml` often has both)."""
    return {"s3.access-key-id": "AKIAUSER" + secrets.token_hex(6).upper(), "s3.secret-access-key": _secret("user-s3-secret-"),
            "s3.session-token": _secret("user-s3-session-")}


def store_requests(store: Attacker) -> list[Any]:
    return [r for r in store.received if r.ours]
