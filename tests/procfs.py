"""What tests read of processes and TCP sockets from Linux's /proc (no `ss` or `ps` needed): a
process's socket inodes, the kernel's TCP tables, and parent pids."""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

LISTEN = "0A"  # the TCP tables' state of a listening socket


class TcpSocket(NamedTuple):
    local_addr: str  # hex, as the table holds it (IPv4: 8 digits, byte-reversed; IPv6: 32)
    local_port: int
    remote_port: int
    state: str
    inode: str
    ipv6: bool


def socket_inodes(pid: int | str) -> set[str]:
    """The inodes of the sockets process `pid` holds open (its /proc/<pid>/fd links)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def tcp_sockets() -> list[TcpSocket]:
    """Every TCP socket of this network namespace (/proc/net/tcp and tcp6)."""
    found = []
    for table, ipv6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            local_addr, local_port = cols[1].split(":")
            found.append(TcpSocket(local_addr, int(local_port, 16), int(cols[2].split(":")[1], 16), cols[3], cols[9], ipv6))
    return found


def parent_pid(pid: int | str) -> int | None:
    """The parent of process `pid` (from /proc/<pid>/stat), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])
