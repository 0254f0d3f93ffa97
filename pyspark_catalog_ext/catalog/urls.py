"""URLs as this package shows them: without secrets. (Origins are compared as `trust.Origin`.)"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["safe_url"]


def safe_url(url: str) -> str:
    """A URL without userinfo and without query (query strings may carry secrets)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else (parts.hostname or "")
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

