"""Loopback test servers standing in for what SeaweedFS lacks. Stdlib only.

- ``S3ExpiryProxy``: S3 pass-through that makes access keys expire after N seconds.
- ``CatalogProxy``: Iceberg REST proxy adding storage-refresh-tokens, short lifetimes,
  endpoint rewrites, an advertised refresh endpoint, counters and fault injection.
- ``IdempotencyProxy``: reference Idempotency-Key semantics in front of a catalog.
- ``PolicyServer``: reference Polaris policy API (create, attach, applicable-policies) in front of a catalog.
"""
from .base import BufferedProxy, Fault, FaultInjector, Request, Response, ThreadedServer
from .catalog_proxy import CatalogProxy, RefreshTokenSigner
from .idempotency_proxy import IdempotencyProxy
from .policy_server import PolicyServer
from .s3_expiry_proxy import S3ExpiryProxy

__all__ = ["BufferedProxy", "CatalogProxy", "Fault", "FaultInjector", "IdempotencyProxy", "PolicyServer",
           "RefreshTokenSigner", "Request", "Response", "S3ExpiryProxy", "ThreadedServer"]
