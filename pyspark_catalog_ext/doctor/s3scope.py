"""Exact-prefix scope of vended credentials, checked with boto3 and the vended keys only.

Inside the table location Put, Head, Get, List and Delete must work. Outside it, writes and
listings must be denied: a sibling prefix (`t` vs `t2`: a policy written as `t*` leaks into
`t2`), the namespace root, the bucket root, another bucket, and listing above the table.

Object keys follow the Iceberg layout (`<location>/data/probe-<uuid>.parquet`): some catalogs
(SeaweedFS table buckets) refuse any other key, even for an admin. boto3 is imported lazily.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from typing import Any

from pyspark_catalog_ext.doctor.context import ProbeContext, VendedCredential, split_location
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed

__all__ = ["check_scope"]


def _error(exc: Exception) -> tuple[int | None, str]:
    response = getattr(exc, "response", None) or {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code = (response.get("Error") or {}).get("Code") or type(exc).__name__
    return status, str(code)


def _attempt(fn: Callable[[], Any]) -> dict[str, Any]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        fn()
        return {"allowed": True, "status": 200, "code": None}
    except ClientError as exc:
        status, code = _error(exc)
        return {"allowed": False, "status": status, "code": code}
    except BotoCoreError as exc:  # endpoint unreachable etc.: not a policy answer
        return {"allowed": False, "status": None, "code": type(exc).__name__, "transport_error": True}


def check_scope(ctx: ProbeContext, cred: VendedCredential, location: str) -> Outcome:
    """Run the inside/outside checks for the table at `location` with `cred`."""
    s3 = ctx.s3_client(cred)
    settings = ctx.s3_settings(cred)
    bucket, path = split_location(location)
    leaf = f"data/probe-{uuid.uuid4()}.parquet"
    body = b"PAR1 pyspark-catalog-ext doctor probe PAR1"
    key = f"{path}/{leaf}"
    checks: list[dict[str, Any]] = []

    def check(name: str, op: str, target: str, expect_allowed: bool, fn: Callable[[], Any]) -> dict[str, Any]:
        row: dict[str, Any] = {"check": name, "op": op, "target": target, "expected": "allowed" if expect_allowed else "denied"}
        row.update(_attempt(fn))
        row["ok"] = row["allowed"] == expect_allowed and not row.get("transport_error")
        checks.append(row)
        return row

    got: dict[str, bytes] = {}
    put = check("inside", "PutObject", f"s3://{bucket}/{key}", True,
                lambda: s3.put_object(Bucket=bucket, Key=key, Body=body))
    if put.get("transport_error"):
        return failed(f"cannot reach S3 at {settings['endpoint'] or 'AWS'} with the vended credentials "
                      f"({put['code']})", checks=checks, s3_endpoint=settings["endpoint"],
                      s3_endpoint_from=settings["endpoint_from"])
    check("inside", "HeadObject", f"s3://{bucket}/{key}", True, lambda: s3.head_object(Bucket=bucket, Key=key))
    check("inside", "GetObject", f"s3://{bucket}/{key}", True,
          lambda: got.__setitem__("body", s3.get_object(Bucket=bucket, Key=key)["Body"].read()))
    check("inside", "ListObjectsV2", f"s3://{bucket}/{path}/", True,
          lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{path}/", MaxKeys=10))
    if put["allowed"] and got.get("body") not in (None, body):
        checks[-2]["ok"] = False
        checks[-2]["code"] = "content mismatch"

    leaked: list[tuple[str, str]] = []

    def denied_put(name: str, target_bucket: str, target_key: str) -> None:
        row = check(name, "PutObject", f"s3://{target_bucket}/{target_key}", False,
                    lambda: s3.put_object(Bucket=target_bucket, Key=target_key, Body=body))
        if row["allowed"]:
            leaked.append((target_bucket, target_key))

    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    denied_put("sibling prefix", bucket, f"{path}2/{leaf}")
    if parent:
        denied_put("namespace root", bucket, f"{parent}/{leaf}")
    denied_put("bucket root", bucket, leaf)
    other_bucket = f"doctor-{uuid.uuid4().hex[:12]}"
    denied_put("another bucket", other_bucket, leaf)
    if parent:
        check("list outside", "ListObjectsV2", f"s3://{bucket}/{parent}/", False,
              lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{parent}/", MaxKeys=10))
    check("list outside", "ListObjectsV2", f"s3://{bucket}/", False,
          lambda: s3.list_objects_v2(Bucket=bucket, MaxKeys=10))
    check("list outside", "ListObjectsV2", f"s3://{bucket}/{path}2/", False,
          lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{path}2/", MaxKeys=10))

    # Delete last: the inside object is the proof Delete works; leaked objects are removed too.
    check("inside", "DeleteObject", f"s3://{bucket}/{key}", True, lambda: s3.delete_object(Bucket=bucket, Key=key))
    for leak_bucket, leak_key in leaked:
        _attempt(functools.partial(s3.delete_object, Bucket=leak_bucket, Key=leak_key))

    evidence = {"location": location, "s3_endpoint": settings["endpoint"], "s3_endpoint_from": settings["endpoint_from"],
                "credential_prefix": cred.prefix, "checks": checks}
    bad = [c for c in checks if not c["ok"]]
    if not bad:
        return passed(f"{sum(c['expected'] == 'allowed' for c in checks)} operations inside the table work, "
                      f"{sum(c['expected'] == 'denied' for c in checks)} outside are denied", **evidence)
    worst = "; ".join(f"{c['op']} {c['check']} {'allowed' if c['allowed'] else 'denied'} "
                      f"({c['status'] or c['code']})" for c in bad[:4])
    return failed(f"scope is not the exact table prefix: {worst}", **evidence)
