"""Real catalog servers on loopback, in front of the embedded SeaweedFS (the `lakehouse` fixture).

- ``RestFixture``: Iceberg's own REST fixture (``org.apache.iceberg.rest.RESTCatalogServer``), a
  JdbcCatalog (SQLite file) behind the reference REST handlers, configured by ``CATALOG_*`` env vars.
- ``Nessie``: Project Nessie's Quarkus server, in-memory version store, Iceberg REST at ``/iceberg``.

Each runs as a child process (dies with its parent via PR_SET_PDEATHSIG, stopped by ``stop()``), on
free ports, with its config and log in a private temp dir. Secrets go through the environment or a
0600 file, never argv.
"""
from __future__ import annotations

import os
from typing import Any

import requests

from pyspark_catalog_ext.ports import free_port
from tests.realservers import artifacts
from tests.servers.child import ChildServer

READY_TIMEOUT_S = 120.0  # Nessie's 245 MB runner needs ~10-20 s on two busy cores
BUCKET = "realservers"  # a plain S3 bucket of the lakehouse (not its Iceberg table bucket)


def ensure_bucket(info: Any, bucket: str = BUCKET) -> None:
    import boto3
    from botocore.config import Config

    s3 = boto3.client("s3", endpoint_url=info.s3_endpoint, aws_access_key_id=info.access_key,
                      aws_secret_access_key=info.secret_key, region_name=info.region or "us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        s3.create_bucket(Bucket=bucket)


class RealServer(ChildServer):
    """A server process; subclasses say how to start it and where it answers."""

    name = "server"
    family = "server"  # the recording's id is <family>-<version> (resources/matrix/real/)
    profile = "seaweedfs"
    version = "?"

    def __init__(self, lakehouse_info: Any):
        super().__init__(self.name)
        self.lake = lakehouse_info
        self.port = free_port()

    # ---- subclass parts
    def command(self) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    @property
    def uri(self) -> str:
        raise NotImplementedError

    @property
    def warehouse(self) -> str:
        raise NotImplementedError

    def ready_url(self) -> str:
        return self.uri + "/v1/config"

    def connection(self) -> dict[str, str]:
        """What a user passes to `spark_conf(profile, ...)` for this server."""
        raise NotImplementedError

    # ---- lifecycle (ChildServer's: started, waited for, stopped with its process group)
    def start(self) -> RealServer:
        ensure_bucket(self.lake)
        cmd, env = self.command()
        self.secrets = [self.lake.secret_key]
        self.spawn(cmd, env, self._answers, timeout=READY_TIMEOUT_S)
        return self

    def _answers(self) -> bool:
        return requests.get(self.ready_url(), params={"warehouse": self.warehouse}, timeout=2).status_code == 200

    def __enter__(self) -> RealServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RestFixture(RealServer):
    """Iceberg's REST fixture. It has no vendor profile: the generic OAuth2 client-credentials
    profile `seaweedfs` fits (token at <uri>/v1/oauth/tokens; the fixture accepts any client).

    With ``include-credentials=true`` it copies its OWN static S3 keys (here the lakehouse admin
    keys) into every load-table answer's ``storage-credentials``, without expiry: no STS, no
    ``/credentials``, no refresh endpoint."""

    name = "iceberg-rest-fixture"
    family = "iceberg-rest-fixture"
    profile = "seaweedfs"

    def __init__(self, lakehouse_info: Any):
        super().__init__(lakehouse_info)
        self.version = artifacts.rest_fixture_version()

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> str:
        return f"s3://{BUCKET}/rest-fixture"

    def command(self) -> tuple[list[str], dict[str, str]]:
        java = artifacts.find_java(17)
        classpath = os.pathsep.join(str(j) for j in artifacts.rest_fixture_classpath())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CATALOG_", "AWS_"))}
        env.update({
            "JAVA_HOME": str(java.home),
            "CATALOG_WAREHOUSE": self.warehouse,
            # A file, not jdbc:sqlite::memory: (every pooled connection would get its own empty database).
            "CATALOG_URI": f"jdbc:sqlite:{self.root / 'catalog.db'}",
            "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
            "CATALOG_S3_ENDPOINT": self.lake.s3_endpoint,
            "CATALOG_S3_PATH__STYLE__ACCESS": "true",
            "CATALOG_S3_ACCESS__KEY__ID": self.lake.access_key,
            "CATALOG_S3_SECRET__ACCESS__KEY": self.lake.secret_key,
            "CATALOG_CLIENT_REGION": self.lake.region or "us-east-1",
            "CATALOG_REST_PORT": str(self.port),
            "CATALOG_INCLUDE__CREDENTIALS": "true",
            "AWS_REGION": self.lake.region or "us-east-1",
        })
        return [java.executable, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-cp", classpath, "org.apache.iceberg.rest.RESTCatalogServer"], env

    def connection(self) -> dict[str, str]:
        # The fixture ignores the client id/secret: any pair gets a token. Not the admin keys.
        # It tells clients no S3 endpoint (only keys): the user names it, as for any generic catalog.
        return {"uri": self.uri, "warehouse": self.warehouse, "credential": "realservers:not-a-secret",
                "s3_endpoint": self.lake.s3_endpoint}


class Nessie(RealServer):
    """Project Nessie (Quarkus runner, Java 21+), authentication off, in-memory store."""

    name = "nessie"
    family = "nessie"
    profile = "nessie"
    version = artifacts.NESSIE_VERSION

    def __init__(self, lakehouse_info: Any, sts: bool = False):
        super().__init__(lakehouse_info)
        self.management_port = free_port()
        self.sts = sts

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/iceberg"

    @property
    def warehouse(self) -> str:
        return "warehouse"

    def properties(self) -> dict[str, str]:
        opts = "nessie.catalog.service.s3.default-options"
        props = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
            "quarkus.otel.sdk.disabled": "true",
            "quarkus.log.console.level": "INFO",
            "nessie.version.store.type": "IN_MEMORY",
            "nessie.server.authentication.enabled": "false",
            "nessie.catalog.default-warehouse": self.warehouse,
            f"nessie.catalog.warehouses.{self.warehouse}.location": f"s3://{BUCKET}/nessie",
            f"{opts}.endpoint": self.lake.s3_endpoint,
            f"{opts}.path-style-access": "true",
            f"{opts}.region": self.lake.region or "us-east-1",
            f"{opts}.access-key": "urn:nessie-secret:quarkus:realservers.s3-admin",
            "realservers.s3-admin.name": self.lake.access_key,
            "realservers.s3-admin.secret": self.lake.secret_key,
        }
        if self.sts:
            props.update({
                f"{opts}.sts-endpoint": self.lake.s3_endpoint,
                f"{opts}.client-iam.enabled": "true",
                f"{opts}.client-iam.assume-role": "arn:aws:iam::role/IcebergVendRole",
                f"{opts}.client-iam.session-duration": "PT15M",
            })
        return props

    def command(self) -> tuple[list[str], dict[str, str]]:
        java = artifacts.find_java(21)
        jar = artifacts.nessie_runner()
        # Quarkus reads $PWD/config/application.properties: the secret stays out of argv.
        conf = self.root / "config" / "application.properties"
        conf.parent.mkdir()
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{k}={v}\n" for k, v in self.properties().items())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("QUARKUS_", "NESSIE_", "AWS_"))}
        env["JAVA_HOME"] = str(java.home)
        return [java.executable, "-Xmx512m", "-XX:TieredStopAtLevel=1", "-jar", str(jar)], env

    def connection(self) -> dict[str, str]:
        # Authentication is off: any bearer token passes (the nessie profile wants OAuth2 or a token).
        return {"uri": self.uri, "warehouse": self.warehouse, "token": "realservers-not-checked"}


SERVERS = {"rest-fixture": RestFixture, "nessie": Nessie}
