"""The embedded lakehouse's way to take back a catalog entry without deleting files.

SeaweedFS's DROP TABLE purges the directory of the table's metadata file, which for a table that
broke the location rule may be another table's. SeaweedFS keeps a table's catalog entry as a
directory (its "marker"); this module removes that directory through the filer's HTTP API, with a
JWT (HS256, expiry only) signed by the lakehouse's own filer key, and only when S3 lists no object
under it: what goes is the entry and empty directories, never a file.

Why: docs/lakehouse.md, section 'Table locations' ("What is checked").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from urllib.parse import quote

__all__ = ["FilerAccess", "filer_jwt"]

_TOKEN_SECONDS = 10
_TIMEOUT = 30.0


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def filer_jwt(key: str, seconds: int = _TOKEN_SECONDS) -> str:
    """A filer token signed with `key` that expires in `seconds`."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = _b64(json.dumps({"exp": int(time.time()) + seconds}, separators=(",", ":")).encode())
    signing_input = header + b"." + claims
    signature = _b64(hmac.new(key.encode(), signing_input, hashlib.sha256).digest())
    return (signing_input + b"." + signature).decode()


@dataclass(frozen=True)
class FilerAccess:
    """The filer's HTTP URL and the lakehouse's filer write key (never shown in repr)."""

    url: str
    write_key: str = field(repr=False)

    def remove_empty_entry(self, path: str) -> str | None:
        """Remove the directory `path` (under /buckets/) and the empty directories inside it;
        None when done, else why not. The caller has checked that no object lies under it; the
        filer's `recursive` delete is used only so empty sub-directories go too."""
        import requests

        if not path.startswith("/buckets/") or any(seg in ("", ".", "..") for seg in path[len("/buckets/"):].split("/")):
            return f"refusing to remove {path[:200]!r}: not a plain path under /buckets/"
        resp = requests.delete(self.url.rstrip("/") + quote(path), params={"recursive": "true", "ignoreRecursiveError": "false"},
                               headers={"Authorization": "Bearer " + filer_jwt(self.write_key)}, timeout=_TIMEOUT,
                               allow_redirects=False)
        if resp.status_code in (200, 202, 204, 404):
            return None
        return f"the filer answered {resp.status_code} removing {path[:200]}"
