"""The Trino server download against a loopback repository: an interrupted download resumes with
a Range request on the next run, a repository that ignores the range is read from the start, and
bytes that never match the pinned sha256 are refused in one line after one fresh download. (The
real 820 MB download runs in tests/spark/test_trino_client.py.)"""

from __future__ import annotations

import hashlib
import re

import pytest

from pyspark_catalog_ext.clients.trino_install import PinnedFile, TrinoUnavailable, _download
from pyspark_catalog_ext.progress import Progress
from tests.servers.base import ThreadedServer

PAYLOAD = bytes(range(256)) * 4096 * 3  # 3 MiB: more than one of the download's 1 MiB blocks


class Repository(ThreadedServer):
    """Serves PAYLOAD (or `served`). `cut_after`: the first answer promises every byte and sends
    that many, then closes. `ranges`: honour Range headers. Records each request's Range."""

    def __init__(self, served: bytes = PAYLOAD, cut_after: int | None = None, ranges: bool = True):
        super().__init__()
        self.served, self.cut_after, self.ranges = served, cut_after, ranges
        self.asked: list[str | None] = []

    def handle(self, h):
        asked = h.headers.get("Range")
        self.asked.append(asked)
        start = int(re.fullmatch(r"bytes=(\d+)-", asked)[1]) if asked and self.ranges else 0
        body = self.served[start:]
        h.send_response(206 if start else 200)
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(self.served) - 1}/{len(self.served)}")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if self.cut_after is not None:
            cut, self.cut_after = self.cut_after, None
            h.wfile.write(body[:cut])
            h.wfile.flush()
            h.close_connection = True
            return
        h.wfile.write(body)


def pinned(repo: Repository, payload: bytes = PAYLOAD) -> PinnedFile:
    return PinnedFile(f"{repo.url}/trino.tar.gz", len(payload), hashlib.sha256(payload).hexdigest(), "Trino test")


def test_an_interrupted_download_fails_in_one_line_and_the_next_run_resumes_it(tmp_path):
    tarball = tmp_path / "trino.tar.gz"
    with Repository(cut_after=(1 << 20) + 123) as repo:
        with pytest.raises(TrinoUnavailable) as failed:
            _download(tarball, Progress(), pinned(repo))
        message = str(failed.value)
        assert "\n" not in message and "run again to resume" in message and repo.url in message, message
        part = tmp_path / "trino.tar.gz.part"
        assert part.is_file() and not tarball.exists()
        kept = part.stat().st_size
        assert 0 < kept < len(PAYLOAD)
        _download(tarball, Progress(), pinned(repo))
    assert repo.asked == [None, f"bytes={kept}-"]  # the second run asked only for what was missing
    assert tarball.read_bytes() == PAYLOAD and not part.exists()


def test_a_repository_that_ignores_the_range_is_read_from_the_start(tmp_path):
    (tmp_path / "trino.tar.gz.part").write_bytes(PAYLOAD[:1000])
    with Repository(ranges=False) as repo:
        _download(tmp_path / "trino.tar.gz", Progress(), pinned(repo))
    assert repo.asked == ["bytes=1000-"]
    assert (tmp_path / "trino.tar.gz").read_bytes() == PAYLOAD  # not the 1000 bytes twice


def test_bytes_that_never_match_the_pinned_sha256_are_downloaded_afresh_once_then_refused(tmp_path):
    tarball = tmp_path / "trino.tar.gz"
    (tmp_path / "trino.tar.gz.part").write_bytes(b"x" * 1000)  # a stale partial file of other bytes
    other = bytes(reversed(PAYLOAD))
    with Repository(served=other) as repo:
        with pytest.raises(TrinoUnavailable) as failed:
            _download(tarball, Progress(), pinned(repo))
    assert repo.asked == ["bytes=1000-", None]  # resumed, did not verify, downloaded afresh once
    assert "does not match its pinned sha256" in str(failed.value) and "\n" not in str(failed.value)
    assert not tarball.exists() and not (tmp_path / "trino.tar.gz.part").exists()


def test_a_partial_file_longer_than_the_pinned_size_is_discarded(tmp_path):
    (tmp_path / "trino.tar.gz.part").write_bytes(PAYLOAD + b"tail")
    with Repository() as repo:
        _download(tmp_path / "trino.tar.gz", Progress(), pinned(repo))
    assert repo.asked == [None]
    assert (tmp_path / "trino.tar.gz").read_bytes() == PAYLOAD
