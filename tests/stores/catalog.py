"""A real Iceberg REST catalog on the emulated stores, vending short-lived SAS and OAuth tokens.

- ``StoreRestFixture``: Iceberg's own REST fixture 1.11.0 (``RESTCatalogServer``: the reference REST
  handlers over a JdbcCatalog in a SQLite file), with ``ResolvingFileIO``, so ``abfs://`` goes to
  ADLSFileIO (on Azurite, with a long-lived account SAS per account), ``gs://`` to GCSFileIO (on
  the GCS front, with a token of its own that never expires) and, in the "mixed" stack, ``s3://``
  to S3FileIO (on SeaweedFS, with its admin keys). It writes and reads every metadata file itself,
  as a catalog server does. It vends nothing.
- ``VendingCatalog``: a loopback front before it that vends, as Polaris, Gravitino or Lakekeeper do
  for these stores: each table answer (create, stage-create, load) gets, for the table's location,
    ADLS: ``adls.sas-token.<host>`` + ``adls.sas-token-expires-at-ms.<host>`` (a container SAS),
    GCS:  ``gcs.oauth2.token`` + ``gcs.oauth2.token-expires-at`` (a token for the table's prefix),
    S3:   ``s3.access-key-id``, ``-secret-access-key``, ``s3.session-token`` (SeaweedFS STS keys, with
          a session policy for the table's prefix) + ``s3.session-token-expires-at-ms``; SeaweedFS's
          STS keys live 900 s at least, so clients reach S3 through an expiry proxy
          (tests/servers/s3_expiry_proxy.py) that refuses each key once its stated lifetime is over,
  in ``config`` and in ``storage-credentials`` (one entry per prefix), plus the endpoints a client
  needs to reach the emulators (``adls.connection-string.<host>``, ``gcs.service.host``,
  ``s3.endpoint``). Only a
  request asking for ``X-Iceberg-Access-Delegation: vended-credentials`` gets tokens.

The front's switches are those of the S3 catalog proxy (tests/servers/catalog_proxy.py):
  lifetime_s                  how long every vended token lives;
  refresh_tokens              a signed ``storage-refresh-token`` on each storage credential, and
                              ``GET .../credentials?storageRefreshToken=...`` serving it (staged
                              tables included: the token names the location);
  advertise_refresh_endpoint  ``client.refresh-credentials-endpoint``,
                              ``gcs.oauth2.refresh-credentials-endpoint`` and
                              ``adls.refresh-credentials-endpoint`` in table configs;
                              ``/credentials`` without a token serves committed tables only
                              (a staged table answers 404, as in apache/iceberg#13554);
  extra_prefixes              {"ns.table": [location, ...]}: vend for these prefixes too, in the
                              same answer (several stores or accounts in one table);
  endpoint_tables             {"ns.table", ...}: these tables are served as with
                              advertise_refresh_endpoint and without refresh_tokens, whatever those
                              say (one job mixing a catalog's two refresh styles);
  store_lifetime_s            {"ns.table": seconds}: the store takes that table's tokens only this
                              long, while the answer states lifetime_s (keys that die early; 0: dead
                              from the start, on every refresh). ADLS: the SAS's own se= ends then;
                              GCS: the front stops taking the token then;
  faults, counters            as every BufferedProxy: ``count(kind=..., table=...)`` over
                              config, oauth, stage-create, create, load, commit, credentials, drop.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import requests

from pyspark_catalog_ext.ports import free_port
from tests.realservers import artifacts
from tests.servers.base import BufferedProxy, Request, Response
from tests.servers.catalog_proxy import NS_SEP, RefreshTokenSigner, RoutePatterns, TokenError, classify_request, table_name
from tests.servers.child import ChildServer
from tests.servers.s3_expiry_proxy import S3ExpiryProxy
from tests.stores.azurite import AdlsLocation, Azurite
from tests.stores.gcs import PROJECT, FakeGcs

HERE = Path(__file__).resolve().parent
FIXTURE_POM = HERE / "rest-fixture-stores-pom.xml"
SERVER_TOKEN_DAYS = 1  # the catalog server's own SAS: outlives any test

_PREFIX = r"^/v1/(?:(?P<prefix>[^/]+)/)?namespaces/(?P<ns>[^/]+)"
_TABLES = re.compile(_PREFIX + r"/tables$")
_TABLE = re.compile(_PREFIX + r"/tables/(?P<t>[^/]+)$")
_CREDS = re.compile(_PREFIX + r"/tables/(?P<t>[^/]+)/credentials$")
_ROUTES = RoutePatterns(_TABLES, _TABLE, _CREDS)  # the REST fixture's routes, with or without a prefix


STS_MIN_SECONDS = 900  # the shortest key SeaweedFS's STS issues


@dataclass(frozen=True)
class S3Store:
    """An S3 store (SeaweedFS): the catalog server reaches it with admin keys; the front vends STS keys
    scoped by a session policy to each table's prefix."""

    endpoint: str
    access_key: str
    secret_key: str = field(repr=False)
    role: str = "arn:aws:iam::role/IcebergVendRole"
    region: str = "us-east-1"

    def client(self, service: str = "s3") -> Any:
        import boto3
        from botocore.config import Config

        return boto3.client(service, endpoint_url=self.endpoint, region_name=self.region, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, config=Config(s3={"addressing_style": "path"}))

    def create_bucket(self, bucket: str) -> None:
        self.client().create_bucket(Bucket=bucket)

    def keys_for(self, location: str) -> dict[str, str]:
        """STS keys for `location` (an s3:// prefix) only."""
        bucket, _, path = location.split("://", 1)[1].partition("/")
        prefix = path.rstrip("/")
        policy = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
             "Resource": [f"arn:aws:s3:::{bucket}/{prefix}/*"]},
            {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [f"arn:aws:s3:::{bucket}"]}]}
        got = self.client("sts").assume_role(RoleArn=self.role, RoleSessionName="vend-" + secrets.token_hex(4),
                                             DurationSeconds=STS_MIN_SECONDS, Policy=json.dumps(policy))["Credentials"]
        return {"s3.access-key-id": got["AccessKeyId"], "s3.secret-access-key": got["SecretAccessKey"],
                "s3.session-token": got["SessionToken"]}

    def keys(self, bucket: str, prefix: str) -> list[str]:
        """Every object key under `prefix` in `bucket` (admin keys)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def endpoints(self) -> dict[str, str]:
        return {"s3.endpoint": self.endpoint, "s3.path-style-access": "true", "client.region": self.region}


def fixture_classpath() -> list[Path]:
    """The REST fixture with the Azure and GCS FileIOs (resolved once by Maven into the cache)."""
    return artifacts.rest_fixture_classpath(FIXTURE_POM)


class StoreRestFixture(ChildServer):
    """Iceberg's REST fixture with its warehouse on an emulated store."""

    def __init__(self, warehouse: str, azurite: Azurite | None = None, gcs: FakeGcs | None = None, s3: S3Store | None = None):
        super().__init__("iceberg-rest-fixture-stores")
        self.warehouse = warehouse
        self.azurite = azurite
        self.gcs = gcs
        self.s3 = s3
        self.port = 0

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> StoreRestFixture:
        java = artifacts.find_java(17)
        classpath = os.pathsep.join(str(j) for j in fixture_classpath())
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALOG_", "AZURE_", "GOOGLE_"))}
        env.update({
            "JAVA_HOME": str(java.home),
            "CATALOG_WAREHOUSE": self.warehouse,
            "CATALOG_URI": f"jdbc:sqlite:{self.root / 'catalog.db'}",
            "CATALOG_IO__IMPL": "org.apache.iceberg.io.ResolvingFileIO",
            "CATALOG_REST_PORT": str(self.port),
        })
        # Property names become env names: "." -> "_", "-" -> "__", lower-cased back by the fixture.
        for key, value in self.server_properties().items():
            env["CATALOG_" + key.replace("-", "__").replace(".", "_").upper()] = value
        cmd = [java.executable, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", classpath, "org.apache.iceberg.rest.RESTCatalogServer"]
        self.spawn(cmd, env, lambda: requests.get(self.uri + "/v1/config", timeout=2).status_code == 200, timeout=120)
        return self

    def server_properties(self) -> dict[str, str]:
        """The server's own store access (it logs its properties: they are masked in log_tail)."""
        props: dict[str, str] = {}
        if self.azurite is not None:
            for account in self.azurite.keys:
                host = self.azurite.host(account)
                sas = self.azurite.account_sas(account, SERVER_TOKEN_DAYS * 86400)
                self.secrets.append(sas)
                props[f"adls.connection-string.{host}"] = self.azurite.endpoint(account)
                props[f"adls.sas-token.{host}"] = sas
        if self.gcs is not None:
            grant = self.gcs.front.mint(None)
            self.secrets.append(grant.token)
            props.update({"gcs.service.host": self.gcs.url, "gcs.project-id": PROJECT,
                          "gcs.oauth2.token": grant.token})
        if self.s3 is not None:
            self.secrets.append(self.s3.secret_key)
            props.update({**self.s3.endpoints(), "s3.access-key-id": self.s3.access_key,
                          "s3.secret-access-key": self.s3.secret_key})
        return props


class VendingCatalog(BufferedProxy):
    """The vending front before a `StoreRestFixture` (see the module docstring)."""

    SECRET_PREFIXES = ("adls.sas-token.", "gcs.oauth2.token", "s3.secret-access-key", "s3.session-token",
                       "storage-refresh-token", "access_token")

    def __init__(self, upstream: str, *, azurite: Azurite | None = None, gcs: FakeGcs | None = None,
                 s3: S3Store | None = None, s3_front: S3ExpiryProxy | None = None,
                 lifetime_s: float = 3600, refresh_tokens: bool = False, token_ttl_seconds: float = 3600,
                 advertise_refresh_endpoint: bool = False, refresh_endpoint_style: str = "relative",
                 port: int = 0):
        super().__init__(upstream, port)
        self.azurite = azurite
        self.gcs = gcs
        self.s3 = s3
        self.s3_front = s3_front  # where clients reach S3: keys there die with their stated lifetime
        self.lifetime_s = lifetime_s
        self.refresh_tokens = refresh_tokens
        self.token_ttl_seconds = token_ttl_seconds
        self.advertise_refresh_endpoint = advertise_refresh_endpoint
        self.refresh_endpoint_style = refresh_endpoint_style
        self.extra_prefixes: dict[str, list[str]] = {}
        self.endpoint_tables: set[str] = set()
        self.store_lifetime_s: dict[str, float] = {}
        self.endpoint_overrides: dict[str, str] = {}  # endpoint key -> URL a table loaded now is given (a proxy)
        self.signer = RefreshTokenSigner()
        self.clock: Callable[[], float] = time.time
        self.secrets_handed_out: set[str] = set()
        self.vended: list[dict[str, Any]] = []  # every credential handed out: table, prefix, store, expiry

    # ------------------------------------------------------------------ classification
    def classify(self, req: Request) -> tuple[str, str | None]:
        return classify_request(req, _ROUTES)

    # ------------------------------------------------------------------ processing
    def forward(self, req: Request, timeout: float = 60.0) -> Response:
        # Plain answers only: the fixture gzips when asked, and the front rewrites the JSON.
        plain = [(k, v) for k, v in req.headers if k.lower() != "accept-encoding"]
        return super().forward(Request(req.method, req.path, plain, req.body), timeout)

    def process(self, req: Request) -> Response:
        resp = self._route(req)
        self._collect_secrets(_json(resp.body))
        return resp

    def _route(self, req: Request) -> Response:
        route = req.route
        if (m := _CREDS.match(route)) and req.method == "GET":
            query = parse_qs(urlsplit(req.path).query)
            if "storageRefreshToken" in query or self._advertises(table_name(_ns(m), unquote(m["t"]))):
                return self._serve_credentials(req, m, query)
            return self.forward(req)
        resp = self.forward(req)
        if (m := _TABLES.match(route)) and req.method == "POST":
            return self._decorate(req, resp, m, (_json(req.body) or {}).get("name"))
        if (m := _TABLE.match(route)) and req.method == "GET":
            return self._decorate(req, resp, m, unquote(m["t"]))
        return resp

    def _decorate(self, req: Request, resp: Response, m: re.Match, name: str | None) -> Response:
        """A LoadTableResult answer: the credentials and endpoints for its location."""
        data = _json(resp.body)
        if resp.status != 200 or name is None or not isinstance(data, dict) or not _wants_vending(req):
            return resp
        location = (data.get("metadata") or {}).get("location")
        if not location:
            return resp
        ns = _ns(m)
        credentials = self.credentials_for(table_name(ns, name), location)
        config = data.setdefault("config", {})
        for cred in credentials:
            config.update(cred["config"])
        config.update(self.endpoints())
        if self._advertises(table_name(ns, name)):
            endpoint = self.refresh_endpoint(m["prefix"], ns, name)
            for key in ("client.refresh-credentials-endpoint", "gcs.oauth2.refresh-credentials-endpoint",
                        "adls.refresh-credentials-endpoint"):
                config[key] = endpoint
        if self.refresh_tokens and table_name(ns, name) not in self.endpoint_tables:
            expires = self.clock() + self.token_ttl_seconds
            for cred in credentials:
                cred["storage-refresh-token"] = self.signer.sign(m["prefix"] or "", ns, name, location, expires)
        data["storage-credentials"] = credentials
        return resp.with_json(data)

    def _advertises(self, table: str) -> bool:
        return self.advertise_refresh_endpoint or table in self.endpoint_tables

    def credentials_for(self, table: str, location: str) -> list[dict[str, Any]]:
        """Fresh storage credentials for `location` and the table's extra prefixes, one per prefix."""
        return [self._mint(table, loc) for loc in [location, *self.extra_prefixes.get(table, [])]]

    def _mint(self, table: str, location: str) -> dict[str, Any]:
        scheme = location.partition("://")[0]
        stated_ms = int((time.time() + self.lifetime_s) * 1000)
        store_lifetime = min(self.lifetime_s, self.store_lifetime_s.get(table, self.lifetime_s))
        if scheme in ("abfs", "abfss"):
            if self.azurite is None:
                raise ValueError(f"{location}: this catalog vends for no Azure store")
            loc = AdlsLocation.parse(location)
            token, expires_ms = self.azurite.container_sas(loc.account, loc.container, store_lifetime)
            if store_lifetime < self.lifetime_s:
                expires_ms = stated_ms
            config = {f"adls.sas-token.{loc.host}": token, f"adls.sas-token-expires-at-ms.{loc.host}": str(expires_ms)}
            store = "adls"
        elif scheme == "gs":
            if self.gcs is None:
                raise ValueError(f"{location}: this catalog vends for no GCS store")
            bucket, _, path = location[len("gs://"):].partition("/")
            grant = self.gcs.front.mint(store_lifetime, bucket=bucket, prefix=path.rstrip("/") + "/" if path else "")
            token, expires_ms = grant.token, int(grant.expires_at_ms or 0)
            if store_lifetime < self.lifetime_s:
                expires_ms = stated_ms
            config = {"gcs.oauth2.token": token, "gcs.oauth2.token-expires-at": str(expires_ms)}
            store = "gcs"
        elif scheme == "s3":
            if self.s3 is None:
                raise ValueError(f"{location}: this catalog vends for no S3 store")
            # store_lifetime_s does not apply: the keys live STS_MIN_SECONDS whatever is stated
            config = {**self.s3.keys_for(location), "s3.session-token-expires-at-ms": str(stated_ms)}
            if self.s3_front is not None:
                self.s3_front.register_key(config["s3.access-key-id"])
            token, expires_ms, store = config["s3.session-token"], stated_ms, "s3"
        else:
            raise ValueError(f"{location}: not an abfs://, gs:// or s3:// location")
        with self._log_lock:
            self.vended.append({"time": time.time(), "table": table, "prefix": location, "store": store,
                                "expires_at_ms": expires_ms, "token": token,
                                **({"access_key": config["s3.access-key-id"]} if store == "s3" else {})})
        return {"prefix": location, "config": config}

    def endpoints(self) -> dict[str, str]:
        """Where a client reaches the emulators (no secret): what a real store's DNS name gives."""
        out: dict[str, str] = {}
        if self.azurite is not None:
            for account in self.azurite.keys:
                out[f"adls.connection-string.{self.azurite.host(account)}"] = self.azurite.endpoint(account)
        if self.gcs is not None:
            out.update({"gcs.service.host": self.gcs.url, "gcs.project-id": PROJECT})
        if self.s3 is not None:
            out.update(self.s3.endpoints())
            if self.s3_front is not None:
                out["s3.endpoint"] = self.s3_front.url
        return {**out, **self.endpoint_overrides}

    def refresh_endpoint(self, prefix: str | None, ns: list[str], name: str) -> str:
        path = (("v1/" + quote(prefix, safe="") if prefix else "v1")
                + f"/namespaces/{quote(NS_SEP.join(ns), safe='')}/tables/{quote(name, safe='')}/credentials")
        return path if self.refresh_endpoint_style == "relative" else f"{self.url}/{path}"

    # ------------------------------------------------------------------ /credentials
    def _serve_credentials(self, req: Request, m: re.Match, query: dict) -> Response:
        ns, name = _ns(m), unquote(m["t"])
        if "planId" in query and "storageRefreshToken" in query:
            return Response.iceberg_error(400, "BadRequestException", "storageRefreshToken and planId are mutually exclusive")
        if "storageRefreshToken" in query:
            try:
                claims = self.signer.verify(query["storageRefreshToken"][0], ns, name, self.clock())
            except TokenError as e:
                return e.response
            location = claims["loc"]
        else:
            load = self.forward(Request("GET", req.route.removesuffix("/credentials"), req.headers))
            if load.status != 200:
                # The fixture stores no staged table: a staged table's refresh is a 404, as on Polaris.
                return load
            location = ((load.json() or {}).get("metadata") or {}).get("location")
        creds = self.credentials_for(table_name(ns, name), location)
        return Response(200, [("Content-Type", "application/json")]).with_json({"storage-credentials": creds})

    def _collect_secrets(self, data: Any) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                if key.startswith(self.SECRET_PREFIXES) and "expires" not in key and isinstance(value, str):
                    self.secrets_handed_out.add(value)
                else:
                    self._collect_secrets(value)
        elif isinstance(data, list):
            for item in data:
                self._collect_secrets(item)


def _wants_vending(req: Request) -> bool:
    return "vended-credentials" in (req.header("X-Iceberg-Access-Delegation") or "")


def _ns(m: re.Match) -> list[str]:
    return unquote(m["ns"]).split(NS_SEP)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


class StoreStack:
    """One store, its catalog server and the vending front, started together (`store_catalog`)."""

    def __init__(self, store: str, emulator: Any, fixture: StoreRestFixture, front: VendingCatalog, warehouse: str):
        self.store = store
        self.emulator = emulator
        self.fixture = fixture
        self.front = front
        self.warehouse = warehouse

    @property
    def uri(self) -> str:
        """Where clients reach the catalog (the vending front)."""
        return self.front.url


@dataclass(frozen=True)
class MixedStores:
    """The three stores of the "mixed" stack, each with a `warehouse` container or bucket."""

    azurite: Azurite
    gcs: FakeGcs
    s3: S3Store
    bucket: str  # the S3 bucket (fresh per stack: SeaweedFS may be shared)

    def location(self, store: str, path: str) -> str:
        if store == "adls":
            return self.azurite.location("warehouse", path)
        if store == "gcs":
            return self.gcs.location("warehouse", path)
        return f"s3://{self.bucket}/{path}"

    def files(self, location: str) -> list[str]:
        """Every object under `location` (an abfs://, gs:// or s3:// prefix), listed on its own store
        with the stores' own keys."""
        scheme, _, rest = location.partition("://")
        if scheme == "abfs":
            loc = AdlsLocation.parse(location)
            container = self.azurite.service(loc.account).get_container_client(loc.container)
            return [f"abfs://{loc.container}@{loc.host}/{b.name}" for b in container.list_blobs(name_starts_with=loc.path + "/")]
        bucket, _, prefix = rest.partition("/")
        if scheme == "gs":
            resp = requests.get(f"{self.gcs.upstream}/storage/v1/b/{bucket}/o", params={"prefix": prefix + "/"}, timeout=10)
            resp.raise_for_status()
            return [f"gs://{bucket}/{o['name']}" for o in resp.json().get("items", [])]
        return [f"s3://{bucket}/{key}" for key in self.s3.keys(bucket, prefix + "/")]


@contextlib.contextmanager
def store_catalog(store: str, gcs_front_process: bool = False, s3: S3Store | None = None,
                  **front_options: Any) -> Iterator[StoreStack]:
    """`store` ("adls": Azurite, "gcs": fake-gcs-server, "mixed": both and `s3`, with the warehouse
    on S3) with a container/bucket `warehouse`, Iceberg's REST fixture on it and the vending front
    (`front_options`: VendingCatalog's switches). Everything stops on exit, also when a start fails
    halfway. `gcs_front_process`: the GCS token front runs in a child process (`ChildGcsFront`;
    Arrow's GCS client needs it)."""
    with contextlib.ExitStack() as stack:
        s3_front: S3ExpiryProxy | None = None
        if store == "adls":
            emulator: Any = stack.enter_context(Azurite())
            emulator.create_container("warehouse")
            warehouse = emulator.location("warehouse", "catalog")
            stores: dict[str, Any] = {"azurite": emulator}
        elif store == "gcs":
            emulator = stack.enter_context(FakeGcs(front_process=gcs_front_process))
            emulator.create_bucket("warehouse")
            warehouse = emulator.location("warehouse", "catalog")
            stores = {"gcs": emulator}
        elif store == "mixed":
            if s3 is None:
                raise ValueError("the mixed stack needs an S3 store (s3=)")
            azurite = stack.enter_context(Azurite())
            azurite.create_container("warehouse")
            gcs = stack.enter_context(FakeGcs(front_process=gcs_front_process))
            gcs.create_bucket("warehouse")
            emulator = MixedStores(azurite, gcs, s3, "mixed-" + secrets.token_hex(4))
            s3.create_bucket(emulator.bucket)
            warehouse = emulator.location("s3", "catalog")
            stores = {"azurite": azurite, "gcs": gcs, "s3": s3}
            s3_front = stack.enter_context(S3ExpiryProxy(s3.endpoint, exempt=(s3.access_key,)))
            s3_front.max_age_seconds = front_options.get("lifetime_s", 3600)
        else:
            raise ValueError(f"unknown store {store!r}: adls, gcs or mixed")
        fixture = StoreRestFixture(warehouse, **stores)
        stack.callback(fixture.stop)
        fixture.start()
        front = stack.enter_context(VendingCatalog(fixture.uri, **stores, s3_front=s3_front, **front_options))
        yield StoreStack(store, emulator, fixture, front, warehouse)
