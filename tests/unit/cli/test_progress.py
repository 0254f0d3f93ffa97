"""Long CLI work draws a progress bar on a terminal and prints nothing extra otherwise."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import time

from pyspark_catalog_ext.progress import Progress
from tests.conftest import CLI, ROOT, run_cli
from tests.spark.test_staging import s3_admin, unique


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_drawn_on_a_terminal_only() -> None:
    tty = _Terminal()
    with Progress(tty) as progress:
        advance = progress.task("deleting orphans", total=3)
        advance(1)
        advance(2)
    assert "deleting orphans" in tty.getvalue() and "3/3" in tty.getvalue()
    plain = io.StringIO()
    with Progress(plain) as progress:
        progress.task("deleting orphans", total=3)(3)
    assert plain.getvalue() == ""


def _raw_bucket(lakehouse, files: int) -> str:
    s3 = s3_admin(lakehouse)
    raw = unique("bar").replace("_", "-")
    s3.create_bucket(Bucket=raw)
    for i in range(files):
        s3.put_object(Bucket=raw, Key=f"t/part-{i}.parquet", Body=b"x")
    return raw


def test_staged_cleanup_shows_its_listing_on_a_terminal_and_stays_quiet_in_a_pipe(lakehouse) -> None:
    raw = _raw_bucket(lakehouse, 5)
    info = lakehouse.info
    args = ["staged", "cleanup", "--uri", info.iceberg_uri, "--warehouse", info.warehouse, "--credential-env", "PCE_CRED",
            "--location", f"s3://{raw}/t", "--allow-non-table-prefix", "--s3-endpoint", info.s3_endpoint,
            "--s3-access-key", info.access_key, "--s3-secret-key-env", "PCE_S3_SECRET"]
    env = {"PCE_CRED": info.credential, "PCE_S3_SECRET": info.secret_key}

    piped = run_cli(*args, env=env)
    assert piped.returncode == 0, piped.stderr
    assert "listing" not in piped.stderr and "\x1b[" not in piped.stderr + piped.stdout

    # The same command with stderr on a terminal (a pseudo-terminal), as a user runs it.
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=follower, cwd=ROOT,
                            env={**os.environ, **env, "COLUMNS": "120"})
    os.close(follower)
    drawn = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the command is done
            break
        if not chunk:
            break
        drawn += chunk
    out, _ = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0, drawn.decode(errors="replace")
    assert f"listing s3://{raw}/t".encode() in drawn, drawn.decode(errors="replace")
    assert b"5 listed" in out  # stdout, the report, is the same either way
