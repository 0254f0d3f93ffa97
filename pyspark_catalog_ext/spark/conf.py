"""Spark settings for an Iceberg REST catalog with vended credentials: the catalog properties
(`catalog_properties`) and every Spark setting as a dict (`spark_conf`, printed by
`pyspark-catalog-ext spark-conf`).

Precedence: profile defaults < PyIceberg config (`.pyiceberg.yaml` / `PYICEBERG_CATALOG__*` env)
< explicit arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pyspark_catalog_ext.catalog.profiles import REMOTE_SIGNING, Profile, get_profile
from pyspark_catalog_ext.errors import ConfigError, redact
from pyspark_catalog_ext.pyiceberg_ext.yaml_config import pyiceberg_config
from pyspark_catalog_ext.secret_keys import REDACTION_REGEX, is_secret_key
from pyspark_catalog_ext.spark.shim_api import EXTENSIONS, S3_FILE_IO, SHIM_CATALOG_IMPL, SHIM_CLIENT_FACTORY, SHIM_PLUGIN, SPARK_CATALOG

if TYPE_CHECKING:
    from pyspark_catalog_ext.lakehouse.server import LakehouseInfo

__all__ = [
    "CatalogSparkConf",
    "spark_conf",
    "catalog_properties",
    "EXTENSIONS",
    "SPARK_CATALOG",
    "SHIM_CATALOG_IMPL",
    "SHIM_CLIENT_FACTORY",
    "SHIM_PLUGIN",
]

DELEGATION_HEADER = "header.X-Iceberg-Access-Delegation"
_STORAGE_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
# PyIceberg-only keys that mean nothing (or something else) to Iceberg Java.
_PYICEBERG_ONLY = {"type", "py-io-impl", "s3.force-virtual-addressing", "downcast-ns-timestamp-to-us-on-write"}


class CatalogSparkConf(dict):
    """A plain `dict[str, str]` of Spark settings whose repr/str mask secret values (not
    `pyspark.SparkConf`: pass it to a builder with `configure()` or `builder.config(map=...)`)."""

    def masked(self) -> dict[str, str]:
        """A copy with secret values replaced by `***`."""
        return {k: ("***" if is_secret_key(k) else v) for k, v in self.items()}

    def __repr__(self) -> str:
        return f"CatalogSparkConf({self.masked()!r})"

    __str__ = __repr__

    def catalog(self, name: str) -> dict[str, str]:
        """The `spark.sql.catalog.<name>.*` properties with the prefix stripped."""
        prefix = f"spark.sql.catalog.{name}."
        return {k[len(prefix):]: v for k, v in self.items() if k.startswith(prefix)}


def _validate_uri(uri: str, what: str = "uri") -> str:
    parsed = urlparse(uri)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(f"{what} {redact(uri)!r} is not an http(s) URL with a host; pass e.g. --{what.replace('_', '-')} https://catalog.example.com/api/catalog")
    if parsed.username or parsed.password:
        raise ConfigError(f"{what} must not embed credentials; pass them with --credential or --token instead")
    return uri.rstrip("/")


def _lakehouse_info(lakehouse: Any) -> LakehouseInfo:
    info = getattr(lakehouse, "info", lakehouse)
    if info is None or not hasattr(info, "iceberg_uri"):
        raise ConfigError("the lakehouse is not running; call .start() (or use start_lakehouse()) first")
    return info


def catalog_properties(
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
    lakehouse: Any = None,
    shim: bool = True,
    delegation: str | None = None,
    signer_uri: str | None = None,
    signer_endpoint: str | None = None,
) -> dict[str, str]:
    """Iceberg catalog properties (no `spark.sql.catalog.<c>.` prefix) after applying precedence.

    `delegation`: "vended-credentials" or "remote-signing" (default: the profile's, or the
    lakehouse's). With remote signing S3FileIO signs through the catalog's REST signer
    (`signer_uri`/`signer_endpoint`: used when the catalog advertises none; a table's config wins) and holds no keys.
    """
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    base: dict[str, str] = pyiceberg_config(from_pyiceberg) if from_pyiceberg else {}

    if prof.name == "local" and not uri and "uri" not in base:
        if lakehouse is None:
            from pyspark_catalog_ext.lakehouse.server import running_info

            lakehouse = running_info()
            if lakehouse is None:
                raise ConfigError("profile 'local' needs a running lakehouse: start one with `pyspark-catalog-ext local up` (or pass --uri)")
        info = _lakehouse_info(lakehouse)
        uri = info.iceberg_uri
        delegation = delegation or getattr(info, "delegation", None)
        warehouse = warehouse or info.warehouse
        if not (credential or token):
            credential = info.credential

    uri = uri or base.pop("uri", None) or prof.default_uri(region)
    if not uri:
        raise ConfigError(f"profile {prof.name!r} needs a catalog URI like {prof.uri_template}; pass --uri (uri=...)")
    uri = _validate_uri(uri)
    warehouse = warehouse or base.pop("warehouse", None) or ("warehouse" if prof.name == "local" else None)
    credential = credential or base.pop("credential", None)
    token = token or base.pop("token", None)
    oauth2_server_uri = oauth2_server_uri or base.pop("oauth2-server-uri", None)
    scope = scope or base.pop("scope", None) or prof.scope
    signing_name = signing_name or base.pop("rest.signing-name", None) or prof.signing_name
    region = region or base.pop("rest.signing-region", None) or base.get("client.region") or base.get("s3.region") or prof.region
    base_sigv4 = base.pop("rest.sigv4-enabled", "false").lower() == "true"

    if sigv4 or (sigv4 is None and not (credential or token) and (base_sigv4 or prof.auth == "sigv4")):
        auth = "sigv4"
    elif token:
        auth = "token"
    elif credential:
        auth = "oauth2"
    else:
        auth = prof.auth

    props: dict[str, str] = {}
    if shim:
        props["catalog-impl"] = SHIM_CATALOG_IMPL  # replaces type=rest; the shim extends RESTCatalog
    else:
        props["type"] = "rest"
    props["uri"] = uri
    if warehouse:
        props["warehouse"] = warehouse
    if auth == "oauth2":
        if not credential:
            raise ConfigError(f"profile {prof.name!r} authenticates with OAuth2: pass --credential <client-id>:<client-secret> (or --token)")
        if ":" not in credential:
            raise ConfigError("credential must look like <client-id>:<client-secret>")
        if not oauth2_server_uri:
            if prof.oauth2_token_path is None:
                raise ConfigError(f"profile {prof.name!r} gets OAuth2 tokens from your identity provider: pass --oauth2-server-uri <token endpoint>")
            oauth2_server_uri = uri + prof.oauth2_token_path
        props.update({"rest.auth.type": "oauth2", "credential": credential, "oauth2-server-uri": _validate_uri(oauth2_server_uri, "oauth2_server_uri")})
        if scope:
            props["scope"] = scope
    elif auth == "token":
        if not token:
            raise ConfigError(f"profile {prof.name!r} authenticates with a bearer token: pass --token")
        props.update({"rest.auth.type": "oauth2", "token": token})
    elif auth == "sigv4":
        if not region:
            raise ConfigError(f"profile {prof.name!r} signs requests with SigV4 and needs a region: pass --region")
        props.update({"rest.auth.type": "sigv4", "rest.sigv4-enabled": "true", "rest.signing-name": signing_name or "execute-api", "rest.signing-region": region})
    delegation = delegation or base.pop(DELEGATION_HEADER, None) or prof.delegation
    if delegation:
        props[DELEGATION_HEADER] = delegation
    remote_signing = delegation == REMOTE_SIGNING
    if remote_signing and prof.no_remote_signing:  # the catalog would answer 400 to the first table load
        raise ConfigError(f"profile {prof.name!r} cannot use delegation 'remote-signing': {prof.no_remote_signing}; "
                          "use delegation='vended-credentials' (the profile's default)")
    if remote_signing:
        props.update(remote_signing_properties(base, signer_uri, signer_endpoint))
    elif signer_uri or signer_endpoint:
        raise ConfigError("signer_uri/signer_endpoint only apply with delegation='remote-signing'; add --delegation remote-signing")
    props["io-impl"] = S3_FILE_IO
    if path_style if path_style is not None else prof.path_style:
        props["s3.path-style-access"] = "true"
    if region and region != "auto":
        props["client.region"] = region
    elif region == "auto":
        props["client.region"] = "us-east-1"  # R2 ignores the region but the AWS SDK insists on one
    if s3_endpoint:
        props["s3.endpoint"] = _validate_uri(s3_endpoint, "s3_endpoint")
    # Whatever else the PyIceberg definition carries (headers, s3.*, client.*) passes through as is.
    for key, value in base.items():
        if key not in _PYICEBERG_ONLY and key not in props and key.startswith(("header.", "s3.", "client.", "rest.", "oauth2")):
            props[key] = value
    if base.get("s3.force-virtual-addressing", "").lower() == "true":
        props.pop("s3.path-style-access", None)
    if shim and not remote_signing:  # remote signing holds no keys, so there is nothing to refresh
        props["s3.client-factory-impl"] = SHIM_CLIENT_FACTORY  # S3 clients that refresh vended credentials
    return props


def remote_signing_properties(base: Mapping[str, str], signer_uri: str | None, signer_endpoint: str | None) -> dict[str, str]:
    """Catalog properties for remote signing; ConfigError if storage keys are configured too
    (the point of the mode is that Spark holds none)."""
    keys = sorted(k for k in base if k in _STORAGE_KEYS)
    if keys:
        raise ConfigError(f"delegation 'remote-signing' takes no storage keys but {', '.join(keys)} is set; remove it (the catalog's signer signs every S3 request)")
    props = {"s3.remote-signing-enabled": "true"}
    if signer_uri:
        props["s3.signer.uri"] = _validate_uri(signer_uri, "signer_uri")
    if signer_endpoint:
        props["s3.signer.endpoint"] = signer_endpoint.strip("/")
    return props


def spark_conf(
    profile: str | Profile = "local",
    catalog: str = "lake",
    *,
    jars: str | None = "offline",
    repository: str | None = None,
    shim: bool = True,
    local: bool | None = None,
    extra_conf: Mapping[str, str] | None = None,
    refresh: Any = None,
    **catalog_args: Any,
) -> CatalogSparkConf:
    """All Spark settings for `catalog` as a CatalogSparkConf dict (secrets masked in its repr).

    `catalog_args` are those of `catalog_properties` (uri, warehouse, credential, token, sigv4,
    oauth2_server_uri, scope, region, signing_name, path_style, s3_endpoint, from_pyiceberg,
    lakehouse). `jars`: "offline" (resolved PyPI jars in spark.jars), "maven" (spark.jars.packages),
    "packages" (everything by coordinates from `repository`: a directory made by
    `pyspark-catalog-ext maven-repo DIR`, or a Maven repository URL) or None (no jar settings). `local`: bind the driver to 127.0.0.1 (default: for profile local).
    `refresh`: a `RefreshPolicy`, written as the catalog's `catalog-ext.refresh.*` properties.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", catalog):
        raise ConfigError(f"catalog name {catalog!r} must be a plain identifier such as 'lake'")
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    props = catalog_properties(prof, shim=shim, **catalog_args)
    conf = CatalogSparkConf()
    conf["spark.sql.extensions"] = EXTENSIONS
    conf[f"spark.sql.catalog.{catalog}"] = SPARK_CATALOG
    conf.update({f"spark.sql.catalog.{catalog}.{k}": v for k, v in props.items()})
    if refresh is not None and shim:
        conf.update({f"spark.sql.catalog.{catalog}.{k}": v for k, v in refresh.catalog_properties().items()})
    conf["spark.redaction.regex"] = REDACTION_REGEX
    if local if local is not None else prof.name == "local":
        # this VM (and many laptops) would otherwise advertise a non-loopback address
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    if jars is not None:
        conf.update(_jar_conf(jars, shim, repository))
    if shim:
        conf["spark.plugins"] = SHIM_PLUGIN  # executors ask the driver over Spark's own RPC
    if extra_conf:
        extra = {str(k): str(v) for k, v in extra_conf.items()}
        conf.update({k: v for k, v in extra.items() if k != "spark.plugins"})
        conf["spark.plugins"] = _join_list(extra.get("spark.plugins", ""), conf.get("spark.plugins", ""))
        if not conf["spark.plugins"]:
            del conf["spark.plugins"]
    return conf


def _join_list(existing: str, ours: str) -> str:
    """Comma lists such as spark.plugins: the user's entries first, ours appended once."""
    items = [i.strip() for i in existing.split(",") if i.strip()]
    return ",".join(items + [i for i in ours.split(",") if i.strip() and i.strip() not in items])


def _jar_conf(mode: str, shim: bool, repository: str | None = None) -> dict[str, str]:
    from pyspark_catalog_ext.spark.jars import MAVEN_PACKAGES, resolve_jars
    from pyspark_catalog_ext.spark.shim_build import shim_jar

    if mode not in ("offline", "maven", "packages"):
        raise ConfigError(f"jars={mode!r} is not a jar mode; use 'offline' (jars from PyPI wheels), 'maven' (spark.jars.packages) or 'packages' (with a repository)")
    if mode == "packages":
        from pyspark_catalog_ext.spark.maven_repo import repository_settings

        if not repository:
            raise ConfigError("jars='packages' needs a repository: lay one out with `pyspark-catalog-ext maven-repo DIR`, then pass --repository DIR")
        return repository_settings(repository, shim)  # the shim's POM pulls the rest: no spark.jars
    if repository:
        raise ConfigError(f"a repository only applies to jars='packages', not {mode!r}; add --jars packages")
    jar_paths = [str(p) for p in resolve_jars()] if mode == "offline" else []
    if shim:
        jar_paths.append(str(shim_jar()))
    conf = {"spark.jars": ",".join(jar_paths)} if jar_paths else {}
    if mode == "maven":
        conf["spark.jars.packages"] = MAVEN_PACKAGES
    return conf
