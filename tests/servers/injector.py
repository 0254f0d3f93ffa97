"""An Iceberg REST catalog in front of another that writes server-given URLs into its answers, the
way a hostile or compromised catalog (or anyone allowed to set a table's properties) could.

Per run, one **channel** and what to inject through it:

  config-defaults / config-overrides   `values` merged into `/v1/config`'s defaults / overrides;
  table-config                         `values` merged into every table answer's `config`;
  storage-credentials                  `values` merged into each of its `storage-credentials[].config`;
  table-properties                     `values` merged into every table answer's `metadata.properties`;
  redirect                             every request of a kind in `redirects` answered with a
                                       redirect to that kind's URL + the request's path (nothing
                                       forwarded): 302 to a GET or HEAD (what clients follow most
                                       readily), 307 to anything else (re-sent with its body).

Table answers that name a signer (`s3.signer.uri`) are pointed at this proxy first, which forwards
sign requests upstream like any other call: the signer is on the catalog's origin, as Iceberg's
default puts it. Every secret the upstream hands out passes through here and is kept: bearer
tokens (`access_token`) in `catalog_secrets`, storage keys in `storage_secrets`."""
from __future__ import annotations

import json
import threading
from collections import Counter

from .base import BufferedProxy, Request, Response

CHANNELS = ("config-defaults", "config-overrides", "table-config", "table-properties", "redirect")
#: Channels the code-loading sweep adds (the leak sweep runs CHANNELS): every storage credential's config,
#: and "every" (the values in each channel but redirect at once: one run where a run is a subprocess).
EXTRA_CHANNELS = ("storage-credentials", "every")
_EVERY = ("config-defaults", "config-overrides", "table-config", "storage-credentials", "table-properties")
STORAGE_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token", "gcs.oauth2.token")
STORAGE_KEY_PREFIXES = ("adls.sas-token.",)
#: Request kinds a redirect run can pick, by route.
KINDS = ("config", "oauth", "sign", "namespaces", "load", "write", "credentials", "other")


def kind_of(method: str, route: str) -> str:
    if route == "/v1/config":
        return "config"
    if route.endswith("/oauth/tokens"):
        return "oauth"
    if "/aws/s3/" in route or route.rstrip("/").endswith("/sign"):
        return "sign"
    if route.endswith("/credentials"):
        return "credentials"
    if "/tables" in route or route.endswith("/transactions/commit"):
        return "load" if method in ("GET", "HEAD") else "write"
    if "/namespaces" in route:
        return "namespaces"
    return "other"


class Injector(BufferedProxy):
    def __init__(self, upstream: str, port: int = 0) -> None:
        super().__init__(upstream, port)
        self._lock = threading.Lock()
        self.channel: str | None = None
        self.values: dict[str, str] = {}
        self.redirects: dict[str, str] = {}
        self.redirected: Counter[str] = Counter()
        self.catalog_secrets: set[str] = set()
        self.storage_secrets: set[str] = set()

    def arm(self, channel: str | None, values: dict[str, str] | None = None, redirects: dict[str, str] | None = None) -> None:
        """What the next run injects (None: nothing)."""
        if channel is not None and channel not in CHANNELS + EXTRA_CHANNELS:
            raise ValueError(f"unknown channel {channel!r}; one of {CHANNELS + EXTRA_CHANNELS}")
        with self._lock:
            self.channel, self.values, self.redirects = channel, dict(values or {}), dict(redirects or {})
            self.redirected.clear()

    def classify(self, req: Request) -> tuple[str, str | None]:
        return kind_of(req.method, req.route), None

    def process(self, req: Request) -> Response:
        kind = kind_of(req.method, req.route)
        with self._lock:
            channel, values, target = self.channel, dict(self.values), self.redirects.get(kind)
            if channel == "redirect" and target is not None:
                self.redirected[kind] += 1
        if channel == "redirect" and target is not None:
            status = 302 if req.method in ("GET", "HEAD") else 307
            return Response(status, [("Location", target.rstrip("/") + req.path), ("Content-Length", "0")], b"")
        resp = self.upstream_answer(req)
        try:
            body = json.loads(resp.body) if resp.body.startswith(b"{") else None
        except ValueError:
            return resp
        if not isinstance(body, dict):
            return resp
        self._keep_secrets(body)
        channels = set(_EVERY) if channel == "every" else {channel}
        if kind == "config" and channels & {"config-defaults", "config-overrides"}:
            for part in ("defaults", "overrides"):
                if f"config-{part}" in channels:
                    body[part] = {**(body.get(part) or {}), **values}
        elif isinstance(body.get("metadata"), dict):
            config = body.setdefault("config", {})
            if isinstance(config, dict) and "s3.signer.uri" in config:
                config["s3.signer.uri"] = self.url
            if "table-config" in channels and isinstance(config, dict):
                config.update(values)
            if "storage-credentials" in channels:
                for credential in body.get("storage-credentials") or []:
                    if isinstance(credential, dict) and isinstance(credential.get("config"), dict):
                        credential["config"].update(values)
            if "table-properties" in channels:
                body["metadata"]["properties"] = {**(body["metadata"].get("properties") or {}), **values}
        else:
            return resp
        return resp.with_json(body)

    def upstream_answer(self, req: Request) -> Response:
        """The upstream's answer before anything is injected (a subclass may put its tables elsewhere)."""
        return self.forward(req)

    def _keep_secrets(self, body: dict) -> None:
        found_catalog, found_storage = set(), set()
        if isinstance(body.get("access_token"), str):
            found_catalog.add(body["access_token"])
        configs = [body.get("config")] + [c.get("config") for c in body.get("storage-credentials") or [] if isinstance(c, dict)]
        for config in configs:
            if isinstance(config, dict):
                found_storage |= {str(v) for k, v in config.items()
                                  if v and (k in STORAGE_KEYS or k.startswith(STORAGE_KEY_PREFIXES))}
        with self._lock:
            self.catalog_secrets |= found_catalog
            self.storage_secrets |= found_storage
