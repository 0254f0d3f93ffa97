"""The remote-signing probe: does the catalog turn on remote signing, and does its signer sign a real
S3 request for the probe table and refuse requests outside it (the check itself is in `signing`)."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.catalog.storage_keys import S3_REMOTE_SIGNING_ENABLED, S3_SIGNER_ENDPOINT, S3_SIGNER_URI, SIGNER_URI
from pyspark_catalog_ext.doctor.context import ProbeContext
from pyspark_catalog_ext.doctor.probes import status_of
from pyspark_catalog_ext.doctor.registry import probe
from pyspark_catalog_ext.doctor.result import Outcome, failed, passed, unsupported
from pyspark_catalog_ext.errors import CatalogError


# ------------------------------------------------------------------------------- remote signing
@probe("remote-signing", "remote signing (s3.remote-signing-enabled)", "signing", needs=("tables",))
def probe_remote_signing(ctx: ProbeContext) -> Outcome:
    evidence: dict[str, Any] = {}
    seen = dict((ctx.shared.get("load_t") or {}).get("config") or {})
    body: dict[str, Any] = {}
    try:
        body = ctx.load_table("t", delegation="remote-signing")
        seen.update(body.get("config") or {})
        evidence["status"] = 200
    except CatalogError as exc:
        evidence["status"] = status_of(exc)
    enabled = str(seen.get(S3_REMOTE_SIGNING_ENABLED, "")).lower() == "true"
    signer = seen.get(S3_SIGNER_URI) or seen.get(S3_SIGNER_ENDPOINT) or seen.get(SIGNER_URI)
    evidence.update({"remote_signing_enabled": enabled, "signer_keys": sorted(k for k in seen if "sign" in k)})
    if not enabled:
        return unsupported("s3.remote-signing-enabled not set with X-Iceberg-Access-Delegation: remote-signing", **evidence)
    evidence["signer"] = signer
    # A real signed request: the probe table's metadata file, signed by the signer, read from S3.
    from pyspark_catalog_ext.doctor.signing import scope_failure, signed_request_check

    config = {**ctx.props, **seen}  # what S3FileIO would see: catalog properties, then the table's config
    location = str((body.get("metadata") or {}).get("location") or "")
    check = signed_request_check(config, str(body.get("metadata-location") or ""), location, ctx.client, scrub=ctx.secrets.scrub)
    evidence["signed_request"] = check
    if check.get("refused"):
        return failed(f"advertised, but {check['refused']}", **evidence)
    why = scope_failure(check)
    if why:
        return failed(why, **evidence)
    if check.get("s3_status") != 200:
        return failed(f"advertised, but a signed GET of the table's metadata file did not work (signer {check.get('sign_status')}, "
                      f"S3 {check.get('s3_status')})", **evidence)
    outside = check.get("outside_sign_status")
    scoped = "refuses" if outside in (401, 403) else f"answers {outside} to"
    copy = check.get("copy_sign_status")
    copies = "refuses" if copy in (401, 403) else f"answers {copy} to"
    return passed(f"a signed GET of the table's metadata file read it from S3; the signer {scoped} requests outside the table "
                  f"and {copies} cross-table copies", **evidence)
