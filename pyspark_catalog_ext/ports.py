"""Loopback ports chosen before the server that will listen on them starts.

A port found free stays free until the server binds it only if no other process can take it in
between. Every socket bound to port 0 (any outgoing connection, and servers such as Spark's
py4j and result sockets) gets a port from the kernel's ephemeral range, so ports are chosen
outside that range. A port inside it could be taken by, say, a Spark driver's result socket; a
readiness probe that then knocks on it talks to the wrong server (an HTTP request read as a
Spark auth frame makes that driver allocate gigabytes).
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterable
from pathlib import Path

HOST = "127.0.0.1"
LOWEST = 10000  # below: well-known and registered services more often run here


def ephemeral_ports() -> range:
    """The ports the kernel hands to sockets bound to port 0 (Linux's default if unreadable)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def port_free(port: int) -> bool:
    """True if nothing listens on 127.0.0.1:port or 0.0.0.0:port."""
    if not 0 < port < 65536:
        return False
    for addr in (HOST, "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((addr, port))
            except OSError:
                return False
    return True


def free_ports(count: int = 1, *, avoid: Iterable[int] = (), offset: int = 0, tries: int = 2000) -> list[int]:
    """`count` distinct ports, free now and outside the ephemeral range; with `offset`, port + offset
    must be free (and outside the range) too. Raises OSError if none is found in `tries` draws."""
    taken, ephemeral, rng = set(avoid), ephemeral_ports(), random.Random()
    found: list[int] = []
    for _ in range(tries):
        if len(found) == count:
            break
        port = rng.randrange(LOWEST, 65536 - offset)
        needs = [port, port + offset] if offset else [port]
        if any(p in taken or p in ephemeral for p in needs) or not all(port_free(p) for p in needs):
            continue
        found.append(port)
        taken.update(needs)
    if len(found) < count:
        raise OSError(f"found {len(found)} of {count} free ports on {HOST} outside the ephemeral range "
                      f"{ephemeral.start}-{ephemeral.stop - 1}; free some ports and retry")
    return found


def free_port() -> int:
    """One port, free now and outside the ephemeral range."""
    return free_ports(1)[0]
