"""Who a store request is for: the ADLS account a location names, with its vended SAS and endpoint,
and a gcsfs filesystem holding a vended GCS token as it is (used by PyIceberg's FileIOs and by the
streaming uploads alike; see pyiceberg_ext/storefs.py for why PyIceberg needs them)."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.catalog.storage_keys import ADLS_CONNECTION, ADLS_SAS, GCS_SERVICE_HOST, GCS_TOKEN
from pyspark_catalog_ext.errors import GcsTokenRefused

__all__ = ["ADLS_CONNECTION", "ADLS_SCHEMES", "AdlsAccount", "adls_account", "gcs_filesystem"]

ADLS_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")


class AdlsAccount:
    """One storage account as a file's location names it: its SAS and its blob endpoint."""

    def __init__(self, host: str, account: str, sas_token: str, endpoint: str) -> None:
        self.host, self.account, self.sas_token, self.endpoint = host, account, sas_token, endpoint

    def __repr__(self) -> str:  # never the token
        return f"AdlsAccount({self.host!r}, endpoint={self.endpoint!r})"


def adls_account(properties: dict[str, Any], netloc: str | None) -> AdlsAccount | None:
    """The vended SAS and endpoint for the account of `netloc` (`container@<host>`), None when the
    properties vend no SAS for that account (PyIceberg's own settings then apply)."""
    host = (netloc or "").rpartition("@")[2].lower()
    if not host:
        return None
    account = host.split(".", 1)[0]
    candidates = [host] + sorted(k[len(ADLS_SAS):] for k in properties
                                 if k.startswith(ADLS_SAS) and k[len(ADLS_SAS):].split(".", 1)[0] == account)
    for candidate in candidates:  # the exact host first, then another endpoint of the same account (wasb: blob.)
        sas = properties.get(ADLS_SAS + candidate)
        if sas:
            endpoint = str(properties.get(ADLS_CONNECTION + candidate) or properties.get(ADLS_CONNECTION + host)
                           or f"https://{account}.blob.core.windows.net")
            return AdlsAccount(candidate, account, str(sas), endpoint)
    return None


def gcs_filesystem(properties: dict[str, Any]) -> Any:
    """A gcsfs filesystem holding the vended token of `properties` (`gcs.oauth2.token`) as it is."""
    from gcsfs.core import GCSFileSystem  # the JSON API only (not gcsfs 2026.10's gRPC bucket-layout lookup)

    token = _vended_gcs_token(str(properties[GCS_TOKEN]))
    return GCSFileSystem(project=properties.get("gcs.project-id"), token=token,
                         endpoint_url=properties.get(GCS_SERVICE_HOST),
                         session_kwargs={"trace_configs": [_on_401(token)]},
                         consistency="none", skip_instance_cache=True)


def _vended_gcs_token(token: str) -> Any:
    """The vended token as google-auth credentials without an expiry of their own (gcsfs then never asks
    to refresh them), whose refresh, asked for once GCS refused them (`_on_401`), raises
    `GcsTokenRefused`: the refusal reaches the reactive path at once, where gcsfs would otherwise send
    the same token again 5 times over ~30 s."""
    from google.oauth2.credentials import Credentials

    class VendedGcsToken(Credentials):
        def refresh(self, request: Any) -> None:
            raise GcsTokenRefused("GCS refused the vended token (401): it is no longer valid")

    return VendedGcsToken(token)


def _on_401(credentials: Any) -> Any:
    """An aiohttp trace that invalidates `credentials` when GCS answers 401 (gcsfs's retry then asks to refresh them)."""
    import aiohttp

    async def on_request_end(session: Any, context: Any, params: Any) -> None:
        if params.response.status == 401:
            credentials.token = None

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(on_request_end)
    return trace
