"""What the remote signer (signer.py) signs at all: the S3 operations on its allow-list, by method
and query keys; the request headers it never signs; the checks of an object key or list prefix and
of a DeleteObjects body. Whether a request stays inside its table's location is the signer's check."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["BUCKET_OPS", "MAX_DELETE_BODY", "MAX_DELETE_KEYS", "OBJECT_OPS", "REFUSED_HEADERS", "bad_key", "delete_keys", "operation"]

MAX_DELETE_BODY = 1 << 20  # the DeleteObjects XML inside a sign request (1000 keys of <= 1 KiB each)
MAX_DELETE_KEYS = 1000  # S3's own limit per DeleteObjects

# What the signer signs: (operation, method, required query keys, optional query keys). A request
# whose method and query keys match no row is refused: that is how ?acl, ?policy, ?tagging,
# ?versionId, ?uploads on a bucket... stay unsigned.
OBJECT_OPS: tuple[tuple[str, str, frozenset[str], frozenset[str]], ...] = (
    ("GetObject", "GET", frozenset(), frozenset()),
    ("HeadObject", "HEAD", frozenset(), frozenset()),
    ("PutObject", "PUT", frozenset(), frozenset()),
    ("DeleteObject", "DELETE", frozenset(), frozenset()),  # S3FileIO.deleteFile
    ("CreateMultipartUpload", "POST", frozenset({"uploads"}), frozenset()),
    ("UploadPart", "PUT", frozenset({"partNumber", "uploadId"}), frozenset()),
    ("CompleteMultipartUpload", "POST", frozenset({"uploadId"}), frozenset()),
    ("AbortMultipartUpload", "DELETE", frozenset({"uploadId"}), frozenset()),
    ("ListParts", "GET", frozenset({"uploadId"}), frozenset({"max-parts", "part-number-marker", "encoding-type"})),
)
BUCKET_OPS: tuple[tuple[str, str, frozenset[str], frozenset[str]], ...] = (
    ("ListObjects", "GET", frozenset({"prefix"}), frozenset({"list-type", "delimiter", "max-keys", "continuation-token",
                                                             "start-after", "marker", "encoding-type", "fetch-owner"})),
    ("DeleteObjects", "POST", frozenset({"delete"}), frozenset()),
)
_BLANK_QUERIES = {"uploads", "delete"}  # flags: any value would be another request
# Request headers that turn an allowed operation into another one (a copy from anywhere in the
# bucket, an ACL, tags, object lock...): refused whatever their case.
REFUSED_HEADERS = ("x-amz-copy-source", "x-amz-acl", "x-amz-grant-", "x-amz-tagging", "x-amz-website-redirect-location",
                   "x-amz-object-lock-", "x-amz-bypass-governance-retention", "x-amz-metadata-directive")


def operation(ops: tuple[tuple[str, str, frozenset[str], frozenset[str]], ...], method: str, params: Mapping[str, str]) -> str | None:
    """The allow-listed operation `method` + query `params` is, or None."""
    names = set(params) - {"x-id"}  # some SDKs name the operation in ?x-id=
    for name, op_method, required, optional in ops:
        if method == op_method and required <= names <= required | optional and params.get("x-id", name) == name:
            if all(params[q] == "" for q in required & _BLANK_QUERIES) and all(params[q] for q in required - _BLANK_QUERIES):
                return name
    return None


def bad_key(key: str) -> str | None:
    """Why an object key or list prefix is not a plain key, or None. `.`/`..` segments (also once
    more URL-decoded, or with backslashes) would leave the table on a server that normalizes."""
    if not key:
        return "an empty key"
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        return "a key with control characters"
    for form in (key, unquote(key)):
        if any(seg in (".", "..") for seg in re.split(r"[/\\]", form)):
            return "a key with . or .. segments (plain or URL-encoded)"
    return None


def delete_keys(body: Any) -> list[str] | str:
    """Object keys of a DeleteObjects XML body, or why it is refused. Stdlib XML (no new
    dependency), made safe by refusing every `<!` (DOCTYPE, ENTITY, CDATA: S3's format has none,
    so expat never gets an entity to expand) and by the size bound; any element outside S3's
    format (VersionId included) is refused rather than ignored."""
    if not isinstance(body, str) or not body:
        return "a DeleteObjects request without its body (the signer must see the keys it deletes)"
    raw = body.encode("utf-8")
    if len(raw) > MAX_DELETE_BODY:
        return f"a DeleteObjects body over {MAX_DELETE_BODY} bytes"
    if "<!" in body:
        return "a DeleteObjects body with a DOCTYPE, entity or CDATA section"
    try:
        root = ET.fromstring(raw)
    except ET.ParseError:
        return "a DeleteObjects body that is not XML"

    def local(el: ET.Element) -> str:
        return el.tag.rsplit("}", 1)[-1]

    if local(root) != "Delete":
        return "a DeleteObjects body whose root is not <Delete>"
    keys = []
    for child in root:
        if local(child) == "Quiet":
            continue
        fields = [local(el) for el in child]
        if local(child) != "Object" or fields != ["Key"]:
            return "a DeleteObjects body with elements other than <Object><Key> and <Quiet>"
        keys.append(child[0].text or "")
    if not keys or len(keys) > MAX_DELETE_KEYS:
        return f"a DeleteObjects body with {len(keys)} keys (1 to {MAX_DELETE_KEYS})"
    return keys
