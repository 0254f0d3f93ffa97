"""Ports chosen before a server starts lie outside the kernel's ephemeral range, so no socket bound
to port 0 in between (a Spark driver's result socket, say) can take one; and they are free."""

from __future__ import annotations

import socket

import pytest

from pyspark_catalog_ext.lakehouse.server import GRPC_OFFSET, _pick_ports
from pyspark_catalog_ext.ports import ephemeral_ports, free_port, free_ports, port_free


def test_a_chosen_port_is_free_and_no_port_zero_socket_can_get_it() -> None:
    ephemeral = ephemeral_ports()
    for _ in range(200):
        port = free_port()
        assert port not in ephemeral and port_free(port), port
    with socket.socket() as sock:  # what the kernel gives a port-zero bind is in the range we avoid
        sock.bind(("127.0.0.1", 0))
        assert sock.getsockname()[1] in ephemeral


def test_several_ports_are_distinct_and_their_offset_partners_are_free_too() -> None:
    ephemeral = ephemeral_ports()
    ports = free_ports(6, offset=GRPC_OFFSET)
    partners = [p + GRPC_OFFSET for p in ports]
    assert len(set(ports) | set(partners)) == 12
    assert not any(p in ephemeral or not port_free(p) for p in ports + partners)


def test_the_lakehouse_picks_its_ports_the_same_way() -> None:
    ephemeral = ephemeral_ports()
    for _ in range(20):
        ports = _pick_ports({})
        assert not any(p in ephemeral for p in ports.values()), ports


def test_a_port_in_use_is_not_free() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert not port_free(sock.getsockname()[1])
    with pytest.raises(OSError, match="free ports on 127.0.0.1 outside the ephemeral range"):
        free_ports(1, avoid=range(65536))
