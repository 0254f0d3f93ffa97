"""SeaweedFS's `security.toml` for one embedded lakehouse: no port of it answers without auth.

Every run gets, in its private temp dir (0700, files 0600, removed at stop): fresh random JWT keys
(the volume server and the filer refuse unsigned HTTP reads and writes), and a certificate
authority made for this run alone, whose private key is discarded once it signed the one node
certificate, with mutual TLS on every gRPC port and on the master's and admin server's HTTP ports.
SeaweedFS reads the file from its working directory; `cryptography` makes the certificates.

Why: docs/lakehouse.md, section 'No port answers without auth'.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from pyspark_catalog_ext.errors import LakehouseError

__all__ = ["SecurityFiles", "write_security"]

CA_FILE, CERT_FILE, KEY_FILE = "ca.crt", "node.crt", "node.key"
# gRPC sections SeaweedFS reads: each server's, the worker's and the client's (used when dialing).
_GRPC_SECTIONS = ("master", "volume", "filer", "s3", "admin", "worker", "msg_broker", "msg_agent", "mq", "client")
_MTLS_HTTP = ("master", "admin")
_VALID_DAYS = 3650  # a `local up` lakehouse may run for long; nothing else can use this CA
JWT_SECONDS = 10


@dataclass(frozen=True)
class SecurityFiles:
    """The keys and files of one run (secrets hidden from repr)."""

    filer_write_key: str = field(repr=False)
    filer_read_key: str = field(repr=False)
    ca: Path
    cert: Path
    key: Path


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _certificates() -> tuple[bytes, bytes, bytes]:
    """(CA certificate, node certificate, node key) in PEM; the CA key never leaves this function."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as exc:
        raise LakehouseError("the embedded lakehouse needs the `cryptography` package for its TLS certificates: "
                             "pip install 'pyspark-catalog-ext[lakehouse]'") from exc
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=_VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"pce-lakehouse-ca-{secrets.token_hex(4)}")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    node_key = ec.generate_private_key(ec.SECP256R1())
    node = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pce-lakehouse-node")]))
            .issuer_name(ca_name).public_key(node_key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return (ca.public_bytes(pem), node.public_bytes(pem),
            node_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))


def write_security(directory: Path) -> SecurityFiles:
    """Write `security.toml` and its certificates into `directory` (the run's private dir)."""
    ca_pem, cert_pem, key_pem = _certificates()
    files = SecurityFiles(secrets.token_urlsafe(32), secrets.token_urlsafe(32), directory / CA_FILE, directory / CERT_FILE,
                          directory / KEY_FILE)
    for path, data in ((files.ca, ca_pem), (files.cert, cert_pem), (files.key, key_pem)):
        _write_private(path, data)
    lines: list[str] = []
    keys = {"jwt.signing": secrets.token_urlsafe(32), "jwt.signing.read": secrets.token_urlsafe(32),
            "jwt.filer_signing": files.filer_write_key, "jwt.filer_signing.read": files.filer_read_key}
    for section, key in keys.items():
        lines += [f"[{section}]", f'key = "{key}"', f"expires_after_seconds = {JWT_SECONDS}", ""]
    lines += ["[access]", "ui = false", "", "[filer.expose_directory_metadata]", "enabled = false", ""]
    ca, cert, key = (json.dumps(str(p)) for p in (files.ca, files.cert, files.key))  # TOML basic strings
    lines += ["[grpc]", f"ca = {ca}", ""]
    for section in _GRPC_SECTIONS:
        lines += [f"[grpc.{section}]", f"cert = {cert}", f"key = {key}", ""]
    for service in _MTLS_HTTP:  # a `ca` makes SeaweedFS require and verify a client certificate
        lines += [f"[https.{service}]", f"cert = {cert}", f"key = {key}", f"ca = {ca}", ""]
    _write_private(directory / "security.toml", "\n".join(lines).encode())
    return files
