"""The leak sweep's attacker servers tell this test's requests from another process's: the suite
runs four pytest processes side by side, and a client in another one may reach a port an attacker
took over from a server that process closed."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.servers.attacker import Attacker

SEND = "import sys, time, urllib.request as u\ntime.sleep(0.5)\ntry: u.urlopen(sys.argv[1], timeout=10)\nexcept Exception: pass\n"


def _get(url: str) -> None:
    try:
        urllib.request.urlopen(url, timeout=10)
    except urllib.error.HTTPError:  # the attacker answers 404
        pass


def wait_for(attacker: Attacker, n: int) -> None:
    deadline = time.monotonic() + 20
    while len(attacker.received) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(attacker.received) >= n, attacker.received


def test_requests_from_this_process_and_its_children_are_ours_and_an_orphans_are_not() -> None:
    attacker = Attacker().start()
    try:
        _get(attacker.url + "/mine")
        subprocess.run([sys.executable, "-c", SEND, attacker.url + "/child"], check=True, timeout=30)
        # Started in the background by a shell that exits at once: by the time it sends, it is
        # nobody's descendant here, as a client in another pytest process is.
        subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" "$1" >/dev/null 2>&1 &', SEND, attacker.url + "/orphan"],
                       check=True, timeout=30)
        wait_for(attacker, 3)
        ours = {r.target: r.ours for r in attacker.received}
        assert ours == {"/mine": True, "/child": True, "/orphan": False}, ours
    finally:
        attacker.stop()
