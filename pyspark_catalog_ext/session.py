"""Spark settings for an Iceberg REST catalog with vended credentials: one call for a builder
(`configure`), the same settings as a dict (`spark_conf`, used by `pyspark-catalog-ext spark-conf`),
a one-liner for the embedded lakehouse (`lakehouse_session`) and the matching PyIceberg catalog.

Precedence: profile defaults < PyIceberg config (`.pyiceberg.yaml` / `PYICEBERG_CATALOG__*` env)
< explicit arguments.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlparse

from .errors import (
    CatalogAuthError,
    CatalogError,
    CatalogExtError,
    CatalogNotFoundError,
    CatalogUnavailableError,
    ConfigError,
    redact,
)
from . import logsafety, spark_errors
from .profiles import DELEGATIONS, REMOTE_SIGNING, Profile, get_profile

if TYPE_CHECKING:  # heavy imports stay lazy: the CLI must start fast
    from pyiceberg.catalog.rest import RestCatalog
    from pyspark.sql import SparkSession

    from .local import LakehouseInfo

__all__ = [
    "CatalogSparkConf",
    "spark_conf",
    "configure",
    "lakehouse_session",
    "pyiceberg_catalog",
    "check_catalog",
    "catalog_properties",
    "EXTENSIONS",
    "SHIM_CATALOG_IMPL",
    "SHIM_CLIENT_FACTORY",
    "SHIM_PLUGIN",
    "REDACTION_REGEX",
    "register",
    "add_connection_arguments",
    "connection_kwargs",
]

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"
SHIM_CATALOG_IMPL = "io.catalogext.shim.ExtRESTCatalog"
SHIM_CLIENT_FACTORY = "io.catalogext.shim.RefreshingS3ClientFactory"
SHIM_PLUGIN = "io.catalogext.shim.CatalogExtPlugin"
DELEGATION_HEADER = "header.X-Iceberg-Access-Delegation"
# Spark's default only covers secret|password|token|access key: `...catalog.lake.credential` would
# show in the Spark UI and event logs without the additions.
SPARK_DEFAULT_REDACTION = "(?i)secret|password|token|access[.]?key"
REDACTION_REGEX = SPARK_DEFAULT_REDACTION + "|credential|signing|session[.-]?token"
_SECRET_KEY = re.compile(r"(?i)(^|[.-])(credential|token|secret|password|secret-access-key|access-key-id|session-token)$")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_STORAGE_KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
# PyIceberg-only keys that mean nothing (or something else) to Iceberg Java.
_PYICEBERG_ONLY = {"type", "py-io-impl", "s3.force-virtual-addressing", "downcast-ns-timestamp-to-us-on-write"}


def is_secret_key(key: str) -> bool:
    """True for conf keys whose values are secrets (credential, token, S3 keys)."""
    return bool(_SECRET_KEY.search(key))


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


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{prefix}{key}."))
        elif value is not None:
            out[f"{prefix}{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def pyiceberg_config(name: str) -> dict[str, str]:
    """The PyIceberg catalog definition `name` (yaml + env), flattened; ConfigError if absent."""
    from pyiceberg.utils.config import Config
    from strictyaml.ruamel.error import MarkedYAMLError, YAMLError  # PyIceberg parses with strictyaml

    try:
        config = Config()
    except YAMLError as exc:
        where = _pyiceberg_yaml_path()
        line = ""
        if isinstance(exc, MarkedYAMLError) and exc.problem_mark is not None:
            line = f" line {exc.problem_mark.line + 1}"  # ruamel's marks count from 0
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"{where}{line}: invalid YAML ({problem}); fix the file or drop --from-pyiceberg") from None
    found = config.get_catalog_config(name)
    if not found:
        known = ", ".join(config.get_known_catalogs()) or "none"
        raise ConfigError(f"no PyIceberg catalog {name!r} in .pyiceberg.yaml or PYICEBERG_CATALOG__* env (known: {known}); define it or drop --from-pyiceberg")
    props = _flatten(found)
    if props.get("type", "rest") != "rest":
        raise ConfigError(f"PyIceberg catalog {name!r} has type {props['type']!r}; only REST catalogs are supported")
    return props


def _pyiceberg_yaml_path() -> str:
    """The `.pyiceberg.yaml` PyIceberg reads: the first of $PYICEBERG_HOME, ~ and the working dir."""
    for directory in (os.environ.get("PYICEBERG_HOME"), os.path.expanduser("~"), os.getcwd()):
        if directory and os.path.isfile(os.path.join(directory, ".pyiceberg.yaml")):
            return os.path.join(directory, ".pyiceberg.yaml")
    return ".pyiceberg.yaml"


def _lakehouse_info(lakehouse: Any) -> "LakehouseInfo":
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
            from .local import running_info

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
    shim: bool = True,
    local: bool | None = None,
    extra_conf: Mapping[str, str] | None = None,
    refresh: Any = None,
    **catalog_args: Any,
) -> CatalogSparkConf:
    """All Spark settings for `catalog` as a CatalogSparkConf dict (secrets masked in its repr).

    `catalog_args` are those of `catalog_properties` (uri, warehouse, credential, token, sigv4,
    oauth2_server_uri, scope, region, signing_name, path_style, s3_endpoint, from_pyiceberg,
    lakehouse). `jars`: "offline" (resolved PyPI jars in spark.jars), "maven" (spark.jars.packages)
    or None (no jar settings). `local`: bind the driver to 127.0.0.1 (default: for profile local).
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
        conf.update(_jar_conf(jars, shim))
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


def _jar_conf(mode: str, shim: bool) -> dict[str, str]:
    from .jars import MAVEN_PACKAGES, resolve_jars
    from .jvm import shim_jar

    if mode not in ("offline", "maven"):
        raise ConfigError(f"jars={mode!r} is not a jar mode; use 'offline' (jars from PyPI wheels) or 'maven' (spark.jars.packages)")
    jar_paths = [str(p) for p in resolve_jars()] if mode == "offline" else []
    if shim:
        jar_paths.append(str(shim_jar()))
    conf = {"spark.jars": ",".join(jar_paths)} if jar_paths else {}
    if mode == "maven":
        conf["spark.jars.packages"] = MAVEN_PACKAGES
    return conf


def configure(builder: Any, profile: str | Profile = "local", catalog: str = "lake", *, check: bool = True, **kwargs: Any) -> Any:
    """Apply `spark_conf(profile, catalog, **kwargs)` to a `SparkSession.Builder` and return it.

    Existing `spark.jars`/`spark.sql.extensions` on the builder are kept (ours are appended). With
    `check=True` the catalog is probed first so a wrong URI, credential or warehouse fails here
    with a one-line error instead of a JVM stack trace at the first query.
    """
    conf = spark_conf(profile, catalog, **kwargs)
    # pyspark reads the conf back through py4j, which logs values at DEBUG: mask ours first.
    logsafety.MASK.add(logsafety.secret_conf_values(conf))
    logsafety.install()
    if check:
        check_catalog(conf, catalog)
    existing = getattr(builder, "_options", {}) or {}
    for key in ("spark.jars", "spark.sql.extensions", "spark.jars.packages", "spark.plugins"):
        if existing.get(key) and key in conf:
            conf[key] = _join_list(existing[key], conf[key])  # the user's entries kept, ours appended
    for key, value in conf.items():
        builder = builder.config(key, value)
    _keep_secrets_off_command_line(builder)
    if kwargs.get("shim", True):
        _attach_on_create(builder)
    return builder


def _keep_secrets_off_command_line(builder: Any) -> None:
    """Make this builder's getOrCreate() start the driver JVM without secret settings on its
    command line. pyspark's launcher passes every builder setting to spark-submit as `--conf k=v`
    (visible in `ps` and /proc/<pid>/cmdline); so when no JVM runs yet, we launch it first with
    the settings minus secrets, and getOrCreate() then hands the whole conf, secrets included, to
    the JVM's SparkConf through Py4J. Everything else is unchanged: Spark still redacts them, new
    sessions and executors see the same conf."""
    if getattr(builder, "_catalog_ext_secrets_off_argv", False):
        return
    builder._catalog_ext_secrets_off_argv = True
    create = builder.getOrCreate

    def get_or_create_without_secrets_in_argv() -> "SparkSession":
        from pyspark import SparkConf, SparkContext

        if SparkContext._gateway is None:
            launch = SparkConf(loadDefaults=False)
            launch.setAll([(k, v) for k, v in builder._options.items() if not is_secret_key(k)])
            SparkContext._ensure_initialized(conf=launch)
        return create()

    builder.getOrCreate = get_or_create_without_secrets_in_argv


def _attach_on_create(builder: Any) -> None:
    """Make this builder's getOrCreate() also start credential refresh, so the configure call is
    the only change a job needs. Only this builder instance is touched (pyspark makes a new one
    for every `SparkSession.builder` access)."""
    create = builder.getOrCreate
    if getattr(create, "_catalog_ext_attaches", False):
        return

    def get_or_create_and_attach() -> "SparkSession":
        from .credentials import attach

        spark = create()
        spark_errors.install()
        attach(spark)
        return spark

    get_or_create_and_attach._catalog_ext_attaches = True  # type: ignore[attr-defined]
    builder.getOrCreate = get_or_create_and_attach


def lakehouse_session(
    lakehouse: Any,
    catalog: str = "lake",
    *,
    app_name: str = "pyspark-catalog-ext",
    master: str = "local[2]",
    shim: bool = True,
    jars: str = "offline",
    extra_conf: Mapping[str, str] | None = None,
) -> "SparkSession":
    """A local SparkSession wired to a running embedded lakehouse (vended credentials, no static keys)."""
    from pyspark.sql import SparkSession

    from .jvm import check_java

    check_java()
    # Spark resolves its local address before reading any conf; keep it (and its warning) on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    defaults = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"}
    builder = SparkSession.builder.master(master).appName(app_name)
    builder = configure(builder, "local", catalog, lakehouse=lakehouse, shim=shim, jars=jars, extra_conf={**defaults, **(extra_conf or {})})
    return builder.getOrCreate()


def _pyiceberg_props(source: Any, catalog: str) -> dict[str, str]:
    if isinstance(source, Mapping):
        props = CatalogSparkConf(source).catalog(catalog) if any(k.startswith("spark.") for k in source) else dict(source)
        if not props:
            raise ConfigError(f"the conf has no spark.sql.catalog.{catalog}.* settings; pass the catalog name it uses")
    else:
        props = catalog_properties("local", lakehouse=_lakehouse_info(source), shim=False)
    # Java-only keys; PyIceberg picks its own FileIO and uses path-style addressing by default.
    for key in ("type", "catalog-impl", "io-impl", "s3.client-factory-impl", "rest.auth.type", "s3.path-style-access"):
        props.pop(key, None)
    if "client.region" in props:
        props.setdefault("s3.region", props["client.region"])
    return props


def pyiceberg_catalog(source: Any, catalog: str = "lake", *, refresh: bool = True, policy: Any = None,
                      credential_source: Any = None, **overrides: str) -> "RestCatalog":
    """A PyIceberg catalog with the same settings (vended-credentials header included).

    `source` is a Lakehouse / LakehouseInfo, or a conf from `spark_conf()` (or a plain dict of
    catalog properties). The catalog is an `ExtRestCatalog` (a RestCatalog subclass): with
    `refresh=True` (default) its tables' FileIOs keep vended credentials fresh in the background
    (`policy`: a `RefreshPolicy`, default from PYSPARK_CATALOG_EXT_REFRESH_* or Spark's defaults;
    `credential_source`: your own `CredentialSource` instead of the catalog), and every commit is
    guarded (Idempotency-Key or reconciliation). `refresh=False` keeps the first keys, as plain PyIceberg.
    """
    from .pyiceberg_ext import ExtRestCatalog

    props = {**_pyiceberg_props(source, catalog), **overrides}
    try:
        return ExtRestCatalog(catalog, refresh=refresh, policy=policy, source=credential_source, **props)
    except CatalogExtError:
        raise  # already one line (a bad PYSPARK_CATALOG_EXT_REFRESH_* value, say)
    except Exception as exc:  # PyIceberg raises its own types; turn the common ones into one-liners
        raise _catalog_error(exc, props.get("uri", "?")) from None


def _catalog_error(exc: Exception, uri: str) -> Exception:
    from pyiceberg.exceptions import ForbiddenError, NoSuchNamespaceError, OAuthError, UnauthorizedError

    name = type(exc).__name__
    if isinstance(exc, (OAuthError, UnauthorizedError, ForbiddenError)):
        return CatalogAuthError(f"the catalog at {uri} rejected the credentials ({name}); check --credential/--token")
    if isinstance(exc, NoSuchNamespaceError):
        return CatalogNotFoundError(f"not found at {uri}: {redact(str(exc))[:200]}")
    import requests

    if isinstance(exc, requests.ConnectionError):
        return CatalogUnavailableError(f"cannot reach the catalog at {uri} (connection refused or DNS failure); start it or fix --uri")
    return CatalogError(f"catalog at {uri} failed: {name}: {redact(str(exc))[:200]}")


def check_catalog(conf: Mapping[str, str], catalog: str = "lake", timeout: float = 10.0) -> dict[str, Any]:
    """Probe the catalog behind `conf`: reachable, credentials accepted, warehouse exists.

    Raises CatalogUnavailableError / CatalogAuthError / CatalogNotFoundError with a one-line
    message; returns the `/v1/config` answer. SigV4 catalogs are only checked for reachability.
    """
    import requests

    props = CatalogSparkConf(conf).catalog(catalog) if any(k.startswith("spark.") for k in conf) else dict(conf)
    uri = props.get("uri", "")
    warehouse = props.get("warehouse")
    headers = {k[len("header."):]: v for k, v in props.items() if k.startswith("header.")}

    def call(method: str, url: str, **kw: Any) -> requests.Response:
        try:
            return requests.request(method, url, timeout=timeout, **kw)
        except requests.RequestException as exc:
            raise CatalogUnavailableError(f"cannot reach the catalog at {uri} ({type(exc).__name__}); start it (pyspark-catalog-ext local up) or fix the uri") from None

    def fail(resp: requests.Response, what: str) -> None:
        if resp.status_code in (401, 403):
            raise CatalogAuthError(f"the catalog at {uri} rejected the credentials on {what} (HTTP {resp.status_code}); check --credential/--token", resp.status_code)
        if resp.status_code >= 500 or resp.status_code == 429:
            raise CatalogUnavailableError(f"the catalog at {uri} answered HTTP {resp.status_code} on {what}; retry later or check the server logs", resp.status_code)
        raise CatalogError(f"the catalog at {uri} answered HTTP {resp.status_code} on {what}; check the uri and warehouse", resp.status_code)

    if props.get("rest.auth.type") == "sigv4":
        call("GET", f"{uri}/v1/config", params={"warehouse": warehouse} if warehouse else None)
        return {}
    if props.get("credential"):
        client_id, _, secret = props["credential"].partition(":")
        resp = call("POST", props.get("oauth2-server-uri", f"{uri}/v1/oauth/tokens"), data={
            "grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": props.get("scope", "catalog")})
        if resp.status_code != 200:
            fail(resp, "the OAuth2 token request")
        headers["Authorization"] = f"Bearer {resp.json().get('access_token', '')}"
    elif props.get("token"):
        headers["Authorization"] = f"Bearer {props['token']}"
    resp = call("GET", f"{uri}/v1/config", params={"warehouse": warehouse} if warehouse else None, headers=headers)
    if resp.status_code != 200:
        fail(resp, "GET /v1/config")
    config = resp.json()
    prefix = (config.get("overrides") or {}).get("prefix") or (config.get("defaults") or {}).get("prefix")
    # Some servers (SeaweedFS) answer /v1/config for any warehouse: listing namespaces tells the truth.
    ns_url = f"{uri}/v1/{prefix}/namespaces" if prefix else f"{uri}/v1/namespaces"
    resp = call("GET", ns_url, headers=headers)
    if resp.status_code == 404:
        raise CatalogNotFoundError(f"warehouse {warehouse!r} not found at {uri} (HTTP 404 listing namespaces); check --warehouse (SeaweedFS: the table bucket name)", 404)
    if resp.status_code != 200:
        fail(resp, "listing namespaces")
    return config


# -- CLI: connection options shared by spark-conf and doctor ----------------------------------------
def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    """Add the catalog connection options (--profile, --uri, --warehouse, auth, ...) to `p`."""
    p.add_argument("--profile", default="local", help="vendor profile (default: local)")
    p.add_argument("--uri")
    p.add_argument("--warehouse")
    # Secrets also from an environment variable or a file: an argument shows in `ps` and shell history.
    p.add_argument("--credential", help="OAuth2 client credentials <client-id>:<client-secret>")
    p.add_argument("--credential-env", metavar="VAR", help="read --credential from environment variable VAR")
    p.add_argument("--credential-file", metavar="PATH", help="read --credential from the file PATH")
    p.add_argument("--token", help="bearer token")
    p.add_argument("--token-env", metavar="VAR", help="read --token from environment variable VAR")
    p.add_argument("--token-file", metavar="PATH", help="read --token from the file PATH")
    p.add_argument("--sigv4", action="store_true", help="sign catalog requests with AWS SigV4")
    p.add_argument("--oauth2-server-uri")
    p.add_argument("--scope")
    p.add_argument("--region")
    p.add_argument("--signing-name")
    p.add_argument("--s3-endpoint")
    p.add_argument("--from-pyiceberg", metavar="NAME", help="start from PyIceberg's catalog NAME (.pyiceberg.yaml / env)")
    p.add_argument("--delegation", choices=DELEGATIONS, help="storage access: vended-credentials (keys) or remote-signing (no keys; default: the profile's)")
    p.add_argument("--signer-uri", help="remote signer base URI when the catalog advertises none (default: the catalog URI)")
    p.add_argument("--signer-endpoint", help="remote signer path when the catalog advertises none (default: v1/aws/s3/sign)")


def connection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The `catalog_properties` keyword arguments from options added by `add_connection_arguments`."""
    return dict(
        uri=args.uri, warehouse=args.warehouse, credential=_secret_argument(args, "credential"),
        token=_secret_argument(args, "token"),
        sigv4=True if args.sigv4 else None, oauth2_server_uri=args.oauth2_server_uri, scope=args.scope,
        region=args.region, signing_name=args.signing_name, s3_endpoint=args.s3_endpoint,
        from_pyiceberg=args.from_pyiceberg, delegation=getattr(args, "delegation", None),
        signer_uri=getattr(args, "signer_uri", None), signer_endpoint=getattr(args, "signer_endpoint", None),
    )


def _secret_argument(args: argparse.Namespace, name: str) -> str | None:
    """--NAME, or the value of the variable named by --NAME-env, or the content of --NAME-file."""
    value, var, path = getattr(args, name), getattr(args, f"{name}_env"), getattr(args, f"{name}_file")
    if sum(x is not None for x in (value, var, path)) > 1:
        raise ConfigError(f"pass only one of --{name}, --{name}-env and --{name}-file")
    if var is not None:
        value = os.environ.get(var)
        if not value:
            raise ConfigError(f"--{name}-env {var}: the environment variable {var} is not set or empty; export it or pass --{name}-file")
    elif path is not None:
        try:
            value = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ConfigError(f"--{name}-file {path}: cannot read it ({reason}); pass a readable file holding only the {name}") from None
        if not value:
            raise ConfigError(f"--{name}-file {path} is empty; put the {name} in it")
    return value


# -- CLI: spark-conf ----------------------------------------------------------------------------
def _format(conf: CatalogSparkConf, fmt: str, show_secrets: bool) -> str:
    shown = dict(conf) if show_secrets else conf.masked()
    if fmt == "defaults":
        return "\n".join(f"{k} {v}" for k, v in shown.items())
    lines = []
    if "spark.jars" in shown:
        lines.append(f"--jars {shlex.quote(shown.pop('spark.jars'))}")
    if "spark.jars.packages" in shown:
        lines.append(f"--packages {shlex.quote(shown.pop('spark.jars.packages'))}")
    lines += [f"--conf {shlex.quote(f'{k}={v}')}" for k, v in shown.items()]
    return " \\\n".join(lines)


def _cmd(args: argparse.Namespace) -> int:
    extra = {}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--conf {item!r} must look like key=value")
        extra[key] = value
    conf = spark_conf(
        args.profile, args.catalog, jars=None if args.jars == "none" else args.jars, shim=not args.no_shim,
        local=True if args.local else None, extra_conf=extra, **connection_kwargs(args),
    )
    if args.check:
        check_catalog(conf, args.catalog)
    print(_format(conf, args.format, args.show_secrets))
    if not args.show_secrets and any(is_secret_key(k) for k in conf):
        print("# secrets are shown as ***; add --show-secrets to print them", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `spark-conf` to the CLI."""
    p = subparsers.add_parser("spark-conf", help="print spark-submit flags or a spark-defaults.conf for a catalog")
    add_connection_arguments(p)
    p.add_argument("--catalog", default="lake", help="Spark catalog name (default: lake)")
    p.add_argument("--jars", choices=["offline", "maven", "none"], default="offline")
    p.add_argument("--no-shim", action="store_true", help="plain Iceberg REST catalog without the refresh shim")
    p.add_argument("--local", action="store_true", help="bind the driver to 127.0.0.1")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="extra setting (repeatable)")
    p.add_argument("--format", choices=["submit", "defaults"], default="submit")
    p.add_argument("--show-secrets", action="store_true", help="print secrets instead of ***")
    p.add_argument("--check", action="store_true", help="probe the catalog (reachable, credentials, warehouse) first")
    p.set_defaults(func=_cmd)
