"""URLs as this package shows and compares them: without secrets, and by origin."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["origin", "safe_url"]


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


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
