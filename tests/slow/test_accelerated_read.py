"""S3FileIO's analytics accelerator (`s3.analytics-accelerator.enabled`, Iceberg 1.10+) reads
through the S3AsyncClient of the shim's client factory, not the sync S3Client. A long read with it
on, behind the loopback proxies, where keys die at 30 % of their stated 10 s lifetime: the async
client must sign with the table's refreshing keys (else it keeps the first keys and every read
after they die fails) and must refresh and resend a call S3 rejects early (the schedule renews at
60 %, so reads between 30 % and 60 % meet dead keys), and must address buckets by path as
`s3.path-style-access` says (the endpoint is a host name). Exact rows; rejected calls were the
async client's (the accelerator's user agent). Plain Iceberg's REST catalog with the shim's client
factory (no table handle) reads with the vended keys.

This venv's Spark 4.1 + Iceberg 1.12 (its `iceberg-aws-bundle` carries the accelerator and netty; the
PyPI route's 1.10.2 jars have neither), in a process of its own: tests/jobs/accelerated_read_job.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import uuid
from collections import Counter

import pytest

from tests.conftest import ROOT
from tests.servers import CatalogProxy, S3ExpiryProxy
from tests.servers.s3_expiry_proxy import access_key_of

LIFETIME = 10  # seconds the catalog proxy states for every key
JOB = ROOT / "tests" / "jobs" / "accelerated_read_job.py"

pytestmark = pytest.mark.slow


class AgentS3Proxy(S3ExpiryProxy):
    """The expiry proxy, also noting which client sent each request: the accelerator's requests
    carry its own user agent (`s3analyticsaccelerator/<version>`), the SDK's own `io#sync` or
    `io#async` (the HEAD probe of a rejected async HEAD is one)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.agents: list[tuple[str, str | None, bool]] = []  # (sync|async, akid, rejected)
        self._rejecting = threading.local()

    def handle(self, h):
        agent = h.headers.get("User-Agent") or ""
        found = re.search(r"\bio[/#](sync|async)\b", agent)
        client = "async" if "s3analyticsaccelerator/" in agent else found.group(1) if found else "?"
        self._rejecting.now = False
        super().handle(h)
        self.agents.append((client, access_key_of(h.path, h.headers.get("Authorization")),
                            self._rejecting.now))

    def _reject(self, h, code=None):
        self._rejecting.now = True
        super()._reject(h, code)


def test_accelerated_read_refreshes_and_retries_on_the_async_client(lakehouse, tmp_path):
    info = lakehouse.info
    with AgentS3Proxy(info.s3_endpoint, exempt=(info.access_key,)) as s3, \
            CatalogProxy(info.iceberg_uri, short_lifetime_seconds=LIFETIME, s3_endpoint=_by_name(s3.url), s3_proxy=s3) as catalog:
        ns = f"accel_{uuid.uuid4().hex[:6]}"
        conn = {"uri": catalog.url, "warehouse": info.warehouse, "s3_endpoint": _by_name(s3.url)}
        stderr = tmp_path / "job.stderr"
        with stderr.open("w") as err:
            proc = subprocess.Popen([sys.executable, str(JOB), json.dumps({"conn": conn, "iceberg": "1.12", "ns": ns,
                                                                          "files": 12, "ms": 30})],
                                    stdout=subprocess.PIPE, stderr=err, text=True, cwd=tmp_path,
                                    env={**_env(), "ACCEL_CREDENTIAL": info.credential})
            steps = {}
            watchdog = threading.Timer(600, proc.kill)  # a hung job ends the stdout loop below
            watchdog.daemon = True
            watchdog.start()
            try:
                for line in proc.stdout:
                    if line.startswith("STEP "):
                        _, name, facts = line.split(" ", 2)
                        steps[name] = json.loads(facts)
                        if name == "written":
                            # From the read on, keys die at 3 s; the schedule renews at 6 s. Not
                            # before: the first rejection teaches the driver the short lifetime,
                            # so it has to be the read's.
                            s3.agents.clear()
                            s3.max_age_seconds = 0.3 * LIFETIME
                proc.wait(timeout=600)
            finally:
                watchdog.cancel()
                proc.kill()
        assert proc.returncode == 0, _causes(stderr.read_text())
        read = steps["read"]
        print("\naccelerated read:", read, "requests (client, rejected):",
              Counter((io, rejected) for io, _, rejected in s3.agents))
        assert steps["written"]["iceberg"].startswith("1.12"), steps
        assert steps["written"]["plain_rows"] == 600, steps  # plain Iceberg's catalog, the shim's factory
        assert (read["rows"], read["sum"]) == (600, read["expected_sum"]), read
        assert read["seconds"] > 1.5 * LIFETIME, read  # the read outlived several keys
        async_requests = [(akid, rejected) for io, akid, rejected in s3.agents if io == "async"]
        assert async_requests, "no request came from the async client: the accelerator was not used"
        assert len({akid for akid, _ in async_requests}) >= 3, "the async client kept its first keys"
        assert any(rejected for _, rejected in async_requests), "no async request met dead keys: this proves nothing"


def _causes(text: str) -> str:
    """A failed job's exception lines (the JVM's stack frames cut from them), then the end of its stderr."""
    causes = [line for line in text.splitlines()
              if re.match(r"\s*(Caused by: |Traceback|[\w.$]+(Exception|Error)\b)", line) and not line.lstrip().startswith("at ")]
    return "\n".join(causes[:20])[:3000] + "\n...\n" + text[-1500:]


def _by_name(url: str) -> str:
    """The S3 endpoint by host name: an IP address makes the SDK address buckets by path whatever
    s3.path-style-access says, a name does not (and `warehouse.localhost` resolves nowhere)."""
    return url.replace("://127.0.0.1:", "://localhost:")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
