"""The doctor's remote-signing probe flags a signer that signs cross-table copies: a catalog in
front of the embedded lakehouse whose signer ignores `x-amz-copy-source` (a real loopback proxy
that advertises itself as the signer and hands the lakehouse's signer each sign request with its
copy-source headers removed, so the answer is a real signature)."""

from __future__ import annotations

import json

import pytest

from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID
from tests.conftest import run_cli
from tests.servers.attacker import Attacker
from tests.servers.base import BufferedProxy, Request, Response


class CopyBlindSigner(BufferedProxy):
    """A catalog + signer that signs copies from anywhere (what the doctor must catch)."""

    def process(self, req: Request) -> Response:
        if req.route.startswith("/v1/aws/s3/sign/"):
            sign = req.json()
            sign["headers"] = {k: v for k, v in (sign.get("headers") or {}).items() if "copy-source" not in k.lower()}
            return self.forward(Request(req.method, req.path, req.headers, json.dumps(sign).encode()))
        resp = self.forward(req)
        body = json.loads(resp.body) if resp.body.startswith(b"{") else None
        if isinstance(body, dict) and isinstance(body.get("config"), dict) and "s3.signer.uri" in body["config"]:
            body["config"]["s3.signer.uri"] = self.url
            return resp.with_json(body)
        return resp


class SignerElsewhere(BufferedProxy):
    """A catalog whose table answers name a signer on another origin (`config[key] = value`)."""

    def __init__(self, upstream: str, key: str, value: str) -> None:
        super().__init__(upstream)
        self.key, self.value = key, value

    def process(self, req: Request) -> Response:
        resp = self.forward(req)
        body = json.loads(resp.body) if resp.body.startswith(b"{") else None
        if isinstance(body, dict) and isinstance(body.get("config"), dict) and "s3.signer.uri" in body["config"]:
            body["config"]["s3.signer.uri"] = self.url
            body["config"][self.key] = self.value
            return resp.with_json(body)
        return resp


def _doctor(uri: str, warehouse: str, secret: str, admin_secret: str) -> dict:
    proc = run_cli("doctor", "--json", "--profile", "seaweedfs", "--uri", uri, "--warehouse", warehouse,
                   "--credential-env", "PCE_TEST_CRED", "--delegation", "remote-signing", "--skip", "spark,pyiceberg,inventory",
                   env={"PCE_TEST_CRED": f"{CLIENT_ID}:{secret}"}, timeout=240)
    assert secret not in proc.stdout + proc.stderr and admin_secret not in proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    return next(p for p in report["probes"] if p["id"] == "remote-signing")


def test_doctor_fails_a_signer_that_signs_a_cross_table_copy(lakehouse, signer):
    with CopyBlindSigner(signer.url) as blind:
        probe = _doctor(blind.url, lakehouse.info.warehouse, signer.clients[CLIENT_ID], lakehouse.info.secret_key)
    check = probe["evidence"]["signed_request"]
    assert probe["status"] == "fail", probe
    assert "cross-table copy" in probe["summary"] and "\n" not in probe["summary"]
    assert check["copy_sign_status"] == 200 and check["delete_outside_sign_status"] == 403
    assert check["s3_status"] == 200  # everything else about it works: only the copy gives it away


def test_doctor_passes_the_embedded_signer(lakehouse, signer):
    probe = _doctor(signer.url, lakehouse.info.warehouse, signer.clients[CLIENT_ID], lakehouse.info.secret_key)
    check = probe["evidence"]["signed_request"]
    assert probe["status"] == "pass", probe
    assert (check["copy_sign_status"], check["delete_outside_sign_status"], check["outside_sign_status"]) == (403, 403, 403)


@pytest.mark.parametrize("key", ["s3.signer.uri", "s3.signer.endpoint"])
def test_doctor_sends_no_token_to_a_signer_on_another_origin(lakehouse, signer, key):
    """A table answer's signer on another origin (an absolute `s3.signer.endpoint` is the whole URL to
    Iceberg's HTTP client) gets nothing: the probe fails naming the setting and the origin."""
    with Attacker() as attacker:
        value = attacker.url if key == "s3.signer.uri" else attacker.url + "/v1/aws/s3/sign"
        with SignerElsewhere(signer.url, key, value) as catalog:
            probe = _doctor(catalog.url, lakehouse.info.warehouse, signer.clients[CLIENT_ID], lakehouse.info.secret_key)
        assert attacker.received == []
    assert probe["status"] == "fail", probe
    assert f"refusing to send the catalog's credentials to {attacker.url} ({key})" in probe["summary"], probe["summary"]
    assert "\n" not in probe["summary"]
