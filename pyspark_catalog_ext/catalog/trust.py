"""Where a catalog's credentials may go: the origins of its trust set, decided where a request is sent.

A catalog's credentials (its `Authorization`, `header.*` values, OAuth client secrets and tokens, a
signer's token) go only to an origin the user chose: the catalog URI's own, the URL-valued settings
the user configured (`USER_URL_KEYS`), and `catalog-ext.trusted-origins`. A URL a server hands out
(in `/v1/config`, a table's config or properties, a signing config, a redirect) never widens the set:
a request to another origin is refused before anything is sent. The check is by origin, parsed and
canonicalised once (`Origin.of`), never by the name of the property that carried the URL.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pyspark_catalog_ext.catalog.trust_rules import USER_URL_KEYS
from pyspark_catalog_ext.errors import ConfigError, UntrustedOriginError

__all__ = ["TRUSTED_ORIGINS_KNOB", "USER_URL_KEYS", "Origin", "TrustedOrigins", "origin_or_none"]

TRUSTED_ORIGINS_KNOB = "catalog-ext.trusted-origins"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, order=True)
class Origin:
    """scheme://host:port, canonical: lower-case scheme and host, explicit port, IPv6 compressed and
    bracketed. Hosts are ASCII only (`xn--` for an international name): a non-ASCII host is refused,
    since IDNA 2003 (Python's codec) and IDNA 2008 (what `requests` sends) map some names
    differently (`glaß` is `glass` to one, `xn--gla-7ka` to the other)."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an absolute http(s) URL. ValueError (one line, the URL not repeated: it may
        carry a secret) for anything else: another scheme, no host, userinfo, a bad port."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"not a valid URL ({exc})") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ValueError(f"not an http(s) URL (scheme {scheme or 'missing'!r})")
        if "@" in parts.netloc:
            raise ValueError("a URL with userinfo (user@host) is refused")
        host = (parts.hostname or "").rstrip(".")
        if not host:
            raise ValueError("the URL has no host")
        if port == 0:
            raise ValueError("port 0 is not a port a request can go to")
        return cls(scheme, _canonical_host(host), port or _DEFAULT_PORTS[scheme])

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def _canonical_host(host: str) -> str:
    try:
        return str(ipaddress.ip_address(host))  # one spelling per address (IPv6 compressed, lower case)
    except ValueError:
        pass
    if not host.isascii():
        raise ValueError("a non-ASCII host name is refused: write it in its ASCII (xn--) form")
    if "%" in host or not all(label and len(label) < 64 for label in host.split(".")):
        raise ValueError("the URL's host is not a valid host name")
    return host.lower()


class TrustedOrigins:
    """The origins a catalog's credentials may be sent to. Built once from the user's own settings."""

    def __init__(self, origins: Iterable[Origin]) -> None:
        self.origins = frozenset(origins)
        if not self.origins:
            raise ConfigError("a catalog needs a uri: its origin is where its credentials go")

    @classmethod
    def from_user_properties(cls, properties: Mapping[str, Any]) -> TrustedOrigins:
        """From the catalog properties the USER gave (call it before any server answer is merged in):
        the origins of `USER_URL_KEYS` and of each entry of `catalog-ext.trusted-origins`."""
        origins = []
        for key in USER_URL_KEYS:
            value = properties.get(key)
            if value:
                origins.append(_user_origin(key, str(value)))
        for entry in str(properties.get(TRUSTED_ORIGINS_KNOB) or "").split(","):
            if entry.strip():
                origins.append(_user_origin(TRUSTED_ORIGINS_KNOB, entry.strip()))
        return cls(origins)

    def allows(self, url: str) -> bool:
        try:
            return Origin.of(url) in self.origins
        except ValueError:
            return False

    def check(self, url: str, key: str | None = None) -> Origin:
        """The URL's origin if trusted; else `UntrustedOriginError`, one line naming the key and the origin."""
        where = f" ({key})" if key else ""
        try:
            origin = Origin.of(url)
        except ValueError as exc:
            raise UntrustedOriginError(f"refusing to send the catalog's credentials to a server-given URL{where}: {exc}") from None
        if origin not in self.origins:
            raise UntrustedOriginError(
                f"refusing to send the catalog's credentials to {origin}{where}: it is neither the catalog's origin nor "
                f"one you configured; if you trust it, add it to {TRUSTED_ORIGINS_KNOB}", origin=str(origin), key=key)
        return origin

    def __repr__(self) -> str:
        return f"TrustedOrigins({', '.join(sorted(map(str, self.origins)))})"


def _user_origin(key: str, value: str) -> Origin:
    try:
        return Origin.of(value)
    except ValueError as exc:
        raise ConfigError(f"{key}: {exc}; expected http(s)://host[:port]") from None


def origin_or_none(url: str) -> Origin | None:
    try:
        return Origin.of(url)
    except ValueError:
        return None
