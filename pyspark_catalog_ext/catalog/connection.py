"""`CatalogConnection`: how to reach one Iceberg REST catalog, resolved once and rendered for
either client.

Resolution order (each later source wins): the vendor profile's defaults, PyIceberg's own catalog
definition (`.pyiceberg.yaml` / `PYICEBERG_CATALOG__*`, `from_pyiceberg=`), then explicit
arguments. The embedded lakehouse hands over its own connection (`LakehouseInfo.connection()`).

Two renderers, each written once: `spark_properties()` in Iceberg Java's names (a Spark catalog's
`spark.sql.catalog.<c>.*`) and `pyiceberg_properties()` in PyIceberg's (as `load_catalog` takes
them). Gravitino's Spark connector converts catalog properties the same way, one direction per
engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from pyspark_catalog_ext.catalog.profiles import REMOTE_SIGNING, Profile, get_profile
from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_FORCE_VIRTUAL_ADDRESSING,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_REMOTE_SIGNING_ENABLED,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    S3_SIGNER_ENDPOINT,
    S3_SIGNER_URI,
)
from pyspark_catalog_ext.commit.policy import DEDUPLICATED
from pyspark_catalog_ext.errors import ConfigError, redact

__all__ = ["CatalogConnection", "DELEGATION_HEADER", "SHIM_PACKAGE", "SHIM_CATALOG_IMPL", "SHIM_CLIENT_FACTORY", "SHIM_FILE_IO",
           "S3_FILE_IO", "pyiceberg_names", "spark_catalog_properties", "validate_uri"]

DELEGATION_HEADER = "header.X-Iceberg-Access-Delegation"
# The Java classes a Spark catalog's properties name: the shim's, and Iceberg's S3 FileIO.
SHIM_PACKAGE = "io.catalogext.shim"
SHIM_CATALOG_IMPL = f"{SHIM_PACKAGE}.ExtRESTCatalog"
SHIM_CLIENT_FACTORY = f"{SHIM_PACKAGE}.RefreshingS3ClientFactory"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
# The shim's default FileIO: each path to its store's FileIO by scheme (S3, ADLS, GCS), all refreshed.
SHIM_FILE_IO = f"{SHIM_PACKAGE}.RefreshingResolvingFileIO"
_STORAGE_KEYS = (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN)
# PyIceberg-only keys that mean nothing (or something else) to Iceberg Java.
_PYICEBERG_ONLY = {"type", "py-io-impl", S3_FORCE_VIRTUAL_ADDRESSING, "downcast-ns-timestamp-to-us-on-write"}
# Keys of a PyIceberg definition that pass through to the catalog as they are.
_PASSTHROUGH = ("header.", "s3.", "client.", "rest.", "oauth2")


def validate_uri(uri: str, what: str = "uri") -> str:
    """`uri` without a trailing slash; ConfigError unless it is http(s) with a host and no user info."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{what} {redact(uri)!r} is not an http(s) URL with a host; pass e.g. --{what.replace('_', '-')} https://catalog.example.com/api/catalog")
    if parsed.username or parsed.password:
        raise ConfigError(f"{what} must not embed credentials; pass them with --credential or --token instead")
    return uri.rstrip("/")


@dataclass(frozen=True)
class CatalogConnection:
    """One catalog: where it is, who we are there, and how storage is reached. Secrets are kept out
    of `repr`."""

    profile: Profile
    uri: str
    warehouse: str | None
    auth: str  # "oauth2" (client credentials), "token", "sigv4" or the profile's own ("none")
    credential: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    oauth2_server_uri: str | None = None
    scope: str | None = None
    signing_name: str | None = None
    region: str | None = None
    delegation: str | None = None
    signer_uri: str | None = None
    signer_endpoint: str | None = None
    path_style: bool = False
    s3_endpoint: str | None = None
    #: Settings of a PyIceberg definition that pass through (headers, s3.*, client.*, rest.*).
    extra: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def resolve(
        cls,
        profile: str | Profile = "local",
        *,
        uri: str | None = None,
        warehouse: str | None = None,
        credential: str | None = None,
        token: str | None = None,
        sigv4: bool | None = None,
        oauth2_server_uri: str | None = None,
        scope: str | None = None,
        region: str | None = None,
        signing_name: str | None = None,
        path_style: bool | None = None,
        s3_endpoint: str | None = None,
        from_pyiceberg: str | None = None,
        delegation: str | None = None,
        signer_uri: str | None = None,
        signer_endpoint: str | None = None,
    ) -> CatalogConnection:
        """The connection after precedence (profile < PyIceberg definition < arguments), checked:
        every missing or contradictory setting is a one-line ConfigError naming the flag to pass.

        `delegation`: "vended-credentials" or "remote-signing" (default: the profile's). With remote
        signing S3FileIO signs through the catalog's REST signer (`signer_uri`/`signer_endpoint`:
        used when the catalog advertises none; a table's config wins) and holds no keys.
        """
        from pyspark_catalog_ext.catalog.pyiceberg_config import pyiceberg_config

        prof = profile if isinstance(profile, Profile) else get_profile(profile)
        base: dict[str, str] = pyiceberg_config(from_pyiceberg) if from_pyiceberg else {}
        uri = uri or base.pop("uri", None) or prof.default_uri(region)
        if not uri:
            raise ConfigError(f"profile {prof.name!r} needs a catalog URI like {prof.uri_template}; pass --uri (uri=...)")
        uri = validate_uri(uri)
        warehouse = warehouse or base.pop("warehouse", None) or ("warehouse" if prof.name == "local" else None)
        credential = credential or base.pop("credential", None)
        token = token or base.pop("token", None)
        oauth2_server_uri = oauth2_server_uri or base.pop("oauth2-server-uri", None)
        scope = scope or base.pop("scope", None) or prof.scope
        signing_name = signing_name or base.pop("rest.signing-name", None) or prof.signing_name
        region = region or base.pop("rest.signing-region", None) or base.get(CLIENT_REGION) or base.get(S3_REGION) or prof.region
        base_sigv4 = base.pop("rest.sigv4-enabled", "false").lower() == "true"

        if sigv4 or (sigv4 is None and not (credential or token) and (base_sigv4 or prof.auth == "sigv4")):
            auth = "sigv4"
        elif token:
            auth = "token"
        elif credential:
            auth = "oauth2"
        else:
            auth = prof.auth
        if auth == "oauth2":
            if not credential:
                raise ConfigError(f"profile {prof.name!r} authenticates with OAuth2: pass --credential <client-id>:<client-secret> (or --token)")
            if ":" not in credential:
                raise ConfigError("credential must look like <client-id>:<client-secret>")
            if not oauth2_server_uri:
                if prof.oauth2_token_path is None:
                    raise ConfigError(f"profile {prof.name!r} gets OAuth2 tokens from your identity provider: pass --oauth2-server-uri <token endpoint>")
                oauth2_server_uri = uri + prof.oauth2_token_path
            oauth2_server_uri = validate_uri(oauth2_server_uri, "oauth2_server_uri")
        elif auth == "token" and not token:
            raise ConfigError(f"profile {prof.name!r} authenticates with a bearer token (pass --token)")
        elif auth == "sigv4" and not region:
            raise ConfigError(f"profile {prof.name!r} signs requests with SigV4 and needs a region: pass --region")

        delegation = delegation or base.pop(DELEGATION_HEADER, None) or prof.delegation
        if delegation == REMOTE_SIGNING:
            if prof.no_remote_signing:  # the catalog would answer 400 to the first table load
                raise ConfigError(f"profile {prof.name!r} cannot use delegation 'remote-signing': {prof.no_remote_signing}; "
                                  "use delegation='vended-credentials' (the profile's default)")
            keys = sorted(k for k in base if k in _STORAGE_KEYS)
            if keys:
                raise ConfigError(f"delegation 'remote-signing' takes no storage keys but {', '.join(keys)} is set; remove it "
                                  "(the catalog's signer signs every S3 request)")
            signer_uri = validate_uri(signer_uri, "signer_uri") if signer_uri else None
            signer_endpoint = signer_endpoint.strip("/") if signer_endpoint else None
        elif signer_uri or signer_endpoint:
            raise ConfigError("signer_uri/signer_endpoint only apply with delegation='remote-signing'; add --delegation remote-signing")
        path_style = bool(path_style if path_style is not None else prof.path_style)
        extra = {k: v for k, v in base.items() if k not in _PYICEBERG_ONLY and k.startswith(_PASSTHROUGH)}
        if base.get(S3_FORCE_VIRTUAL_ADDRESSING, "").lower() == "true":
            path_style = False
            extra.pop(S3_PATH_STYLE_ACCESS, None)
        return cls(profile=prof, uri=uri, warehouse=warehouse, auth=auth, credential=credential, token=token,
                   oauth2_server_uri=oauth2_server_uri, scope=scope, signing_name=signing_name, region=region,
                   delegation=delegation, signer_uri=signer_uri, signer_endpoint=signer_endpoint, path_style=path_style,
                   s3_endpoint=validate_uri(s3_endpoint, "s3_endpoint") if s3_endpoint else None, extra=extra)

    @property
    def remote_signing(self) -> bool:
        return self.delegation == REMOTE_SIGNING

    def spark_properties(self, *, shim: bool = True) -> dict[str, str]:
        """Iceberg Java catalog properties (a Spark catalog's, without `spark.sql.catalog.<c>.`);
        `shim` puts the refresh shim in (`catalog-impl`, the FileIO that routes each table's paths to its
        store, and the S3 client factory), else `type=rest` with S3FileIO."""
        props: dict[str, str] = {"catalog-impl": SHIM_CATALOG_IMPL} if shim else {"type": "rest"}
        props["uri"] = self.uri
        if self.warehouse:
            props["warehouse"] = self.warehouse
        if self.auth == "oauth2":
            props.update({"rest.auth.type": "oauth2", "credential": str(self.credential),
                          "oauth2-server-uri": str(self.oauth2_server_uri)})
            if self.scope:
                props["scope"] = self.scope
        elif self.auth == "token":
            props.update({"rest.auth.type": "oauth2", "token": str(self.token)})
        elif self.auth == "sigv4":
            props.update({"rest.auth.type": "sigv4", "rest.sigv4-enabled": "true",
                          "rest.signing-name": self.signing_name or "execute-api", "rest.signing-region": str(self.region)})
        if self.delegation:
            props[DELEGATION_HEADER] = self.delegation
        if self.remote_signing:
            props[S3_REMOTE_SIGNING_ENABLED] = "true"
            if self.signer_uri:
                props[S3_SIGNER_URI] = self.signer_uri
            if self.signer_endpoint:
                props[S3_SIGNER_ENDPOINT] = self.signer_endpoint
        props["io-impl"] = SHIM_FILE_IO if shim else S3_FILE_IO
        if self.path_style:
            props[S3_PATH_STYLE_ACCESS] = "true"
        if self.region and self.region != "auto":
            props[CLIENT_REGION] = self.region
        elif self.region == "auto":
            props[CLIENT_REGION] = "us-east-1"  # R2 ignores the region but the AWS SDK insists on one
        if self.s3_endpoint:
            props[S3_ENDPOINT] = self.s3_endpoint
        if self.profile.deduplicated_operations is not None:  # what the catalog replays under a key
            props[DEDUPLICATED] = ",".join(self.profile.deduplicated_operations) or "none"
        for key, value in self.extra.items():  # what else the PyIceberg definition carries, as is
            props.setdefault(key, value)
        if shim and not self.remote_signing:  # remote signing holds no keys, so there is nothing to refresh
            props["s3.client-factory-impl"] = SHIM_CLIENT_FACTORY  # S3 clients that refresh vended credentials
        return props

    def pyiceberg_properties(self) -> dict[str, Any]:
        """PyIceberg catalog properties (as `load_catalog` takes them) for the same catalog."""
        return pyiceberg_names(self.spark_properties(shim=False))


def spark_catalog_properties(conf: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The `spark.sql.catalog.<name>.*` settings of a Spark conf, prefix stripped: a catalog's properties."""
    prefix = f"spark.sql.catalog.{name}."
    return {k[len(prefix):]: v for k, v in conf.items() if k.startswith(prefix)}


def pyiceberg_names(props: Mapping[str, str]) -> dict[str, Any]:
    """PyIceberg's names for a Spark (Iceberg Java) catalog's properties.

    The two clients spell most settings alike (`uri`, `warehouse`, `credential`, `token`, `scope`,
    `oauth2-server-uri`, `header.*`, `rest.sigv4-enabled`, `rest.signing-*`); these differ: basic auth
    (`rest.auth.type=basic` + `rest.auth.basic.*` is PyIceberg's `auth` mapping), SigV4 keys
    (`rest.access-key-id` is PyIceberg's `client.access-key-id`), and the Java-only FileIO settings.
    """
    out: dict[str, Any] = {k: v for k, v in props.items() if v is not None}
    kind = str(out.pop("rest.auth.type", "") or "").strip().lower()
    if kind == "basic":
        user, password = out.pop("rest.auth.basic.username", None), out.pop("rest.auth.basic.password", None)
        if not user or password is None:
            raise ConfigError("basic auth needs rest.auth.basic.username and rest.auth.basic.password")
        out["auth"] = {"type": "basic", "basic": {"username": user, "password": password}}
    elif kind not in ("", "none", "oauth2", "bearer", "sigv4"):
        raise ConfigError(f"unsupported rest.auth.type {kind!r}: use none, oauth2, bearer, basic or sigv4")
    if kind == "sigv4":
        out["rest.sigv4-enabled"] = "true"
    for java, python in (("rest.access-key-id", "client.access-key-id"), ("rest.secret-access-key", "client.secret-access-key"),
                         ("rest.session-token", "client.session-token")):
        if java in out:
            out.setdefault(python, out.pop(java))
    if str(out.get("rest.sigv4-enabled", "")).lower() == "true":
        region = out.get("rest.signing-region") or out.get(CLIENT_REGION) or out.get(S3_REGION)
        if not region:
            raise ConfigError("SigV4 auth needs a region: set rest.signing-region")
        out["rest.signing-region"] = region
    # Java-only keys; PyIceberg picks its own FileIO and uses path-style addressing by default.
    for key in ("type", "catalog-impl", "io-impl", "s3.client-factory-impl", S3_PATH_STYLE_ACCESS):
        out.pop(key, None)
    if CLIENT_REGION in out:
        out.setdefault(S3_REGION, out[CLIENT_REGION])
    return out
