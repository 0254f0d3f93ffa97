"""Vendor profiles: the defaults each Iceberg REST catalog vendor needs, as small frozen dataclasses.

A profile only supplies defaults; explicit arguments (or PyIceberg config) always win. Only
`local` and `seaweedfs` run against their real server in this project's tests (`tested_here`);
those marked `emulated` run the user path against a loopback emulation of the vendor's documented
behaviour in front of SeaweedFS (tests/emulators); the rest are reference settings from vendor docs.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark_catalog_ext.errors import ConfigError

__all__ = ["Profile", "PROFILES", "get_profile", "AUTH_KINDS"]

AUTH_KINDS = ("oauth2", "token", "sigv4", "none")
VENDED = "vended-credentials"
REMOTE_SIGNING = "remote-signing"
DELEGATIONS = (VENDED, REMOTE_SIGNING)  # the X-Iceberg-Access-Delegation modes this package configures

# Probe ids of `pyspark-catalog-ext doctor` (the modules pyspark_catalog_ext.doctor.suite lists) used below.
BASIC_PROBES = ("config", "auth", "namespaces", "tables")
ENGINE_PROBES = ("pyiceberg", "spark-ctas", "spark-read", "spark-append")
VENDING_PROBES = BASIC_PROBES + ("vended-credentials", "credential-scope", "stage-commit") + ENGINE_PROBES
# What SeaweedFS 4.48 is known to do (shared/README.md §2): re-staging is its only refresh path.
SEAWEEDFS_PROBES = VENDING_PROBES + ("re-stage",)


@dataclass(frozen=True)
class Profile:
    """Defaults for one catalog vendor.

    uri_template: what the catalog URI looks like (`<...>` marks parts you fill in); None = filled
        from the embedded lakehouse.
    warehouse_hint: what `warehouse` means for this vendor.
    auth: default auth kind, one of AUTH_KINDS.
    oauth2_token_path: token endpoint relative to the URI (OAuth2 client credentials); None = the
        catalog's own default or an external IdP you must name with `oauth2_server_uri`.
    scope: OAuth2 scope the vendor expects, if any.
    signing_name / region: SigV4 signing service name and default region.
    delegation: value for the `X-Iceberg-Access-Delegation` header: "vended-credentials" (keys for
        the client) or "remote-signing" (the catalog signs S3 requests; see docs/signing.md);
        None = don't send it. `configure(delegation=...)` / `--delegation` override it.
    path_style: `s3.path-style-access` (None = leave Iceberg's default).
    required_probes: `pyspark-catalog-ext doctor` probes that must pass for this vendor (the
        doctor runs every probe; it exits non-zero when one of these fails or is unsupported).
    alias_of: the profile this one is a variant of (same server, another endpoint/signing name).
    tested_here: True if this project's test suite runs against it.
    emulated: True if the test suite runs the user path against a loopback emulation of this
        vendor's documented behaviour (tests/emulators), not against the vendor's server.
    no_remote_signing: why the vendor's catalog refuses remote signing (with its reference), or
        None; a remote-signing configuration for it is then refused up front, in one line.
    deduplicated_operations: the operations the vendor's catalog replays under an Idempotency-Key
        when it advertises a lifetime (names from commit-decisions.json's `deduplicated_operations`),
        by family and release (`idempotency_source` says which); None = not known, so both runtimes
        trust only the narrowest known set. Set as `catalog-ext.commit.deduplicated-operations`.
    """

    name: str
    description: str
    uri_template: str | None
    warehouse_hint: str
    auth: str
    oauth2_token_path: str | None = None
    scope: str | None = None
    signing_name: str | None = None
    region: str | None = None
    delegation: str | None = VENDED
    path_style: bool | None = None
    required_probes: tuple[str, ...] = BASIC_PROBES
    alias_of: str | None = None
    tested_here: bool = False
    emulated: bool = False
    notes: str = ""
    no_remote_signing: str | None = None
    deduplicated_operations: tuple[str, ...] | None = None
    idempotency_source: str = ""

    def needs_uri(self) -> bool:
        return self.uri_template is None or "<" in self.uri_template

    def default_uri(self, region: str | None = None) -> str | None:
        """The template with the region filled in, when that is its only placeholder."""
        if self.uri_template and region:
            filled = self.uri_template.replace("<region>", region)
            if "<" not in filled:
                return filled
        return None if self.needs_uri() else self.uri_template


_PROFILES = (
    Profile(
        name="local",
        description="the embedded SeaweedFS lakehouse (`pyspark-catalog-ext local up` or start_lakehouse())",
        uri_template=None,
        warehouse_hint="warehouse (the table bucket created at start-up)",
        auth="oauth2",
        oauth2_token_path="/v1/oauth/tokens",
        region="us-east-1",
        path_style=True,
        required_probes=SEAWEEDFS_PROBES,
        tested_here=True,
        notes="credential = the lakehouse front's OAuth2 client, random per instance (LakehouseInfo.credential; no S3 key); vended credentials last 900 s by default",
    ),
    Profile(
        name="seaweedfs",
        description="a SeaweedFS server (`weed mini`/`weed s3` with -s3.port.iceberg) you run yourself",
        uri_template="http://<host>:8181",
        warehouse_hint="<table-bucket> (each S3 table bucket is its own catalog)",
        auth="oauth2",
        oauth2_token_path="/v1/oauth/tokens",
        region="us-east-1",
        path_style=True,
        required_probes=SEAWEEDFS_PROBES,
        tested_here=True,
        notes="OAuth2 client id/secret = an S3 access/secret key; vending needs -s3.iceberg.credentialRole and >= 900 s",
    ),
    Profile(
        name="polaris",
        description="Apache Polaris (incubating) / Snowflake Open Catalog",
        uri_template="https://<host>/api/catalog",
        warehouse_hint="<catalog-name> as defined in Polaris",
        auth="oauth2",
        oauth2_token_path="/v1/oauth/tokens",
        scope="PRINCIPAL_ROLE:ALL",
        required_probes=VENDING_PROBES,
        emulated=True,
        notes="credential = <client-id>:<client-secret> of a Polaris principal",
        no_remote_signing="Polaris signs no S3 requests (apache/polaris PR #2280 is open)",
        # 1.7.0, the first release with idempotency (opt-in: polaris.idempotency.enabled=true); earlier
        # releases advertise no lifetime, so nothing is repeated under a key there anyway.
        deduplicated_operations=("createTable", "updateTable"),
        idempotency_source="Polaris 1.7.0 recorded (shared/catalogs/polaris-1.7.0-observed.json): createTable and "
                           "updateTable without assert-create replayed; a staged create's commit and a namespace create "
                           "answered 409, commitTransaction ran twice",
    ),
    Profile(
        name="lakekeeper",
        description="Lakekeeper",
        uri_template="https://<host>/catalog",
        warehouse_hint="<warehouse-name> as created in Lakekeeper",
        auth="oauth2",
        oauth2_token_path=None,
        required_probes=VENDING_PROBES,
        emulated=True,
        notes="OAuth2 goes to your IdP (Keycloak, Entra ID...): pass oauth2_server_uri=<idp token endpoint> and scope if required",
    ),
    Profile(
        name="unity",
        description="Unity Catalog OSS, Iceberg REST endpoint (read-only)",
        uri_template="https://<host>/api/2.1/unity-catalog/iceberg",
        warehouse_hint="<catalog-name> in Unity Catalog",
        auth="token",
        required_probes=("config", "auth"),
        emulated=True,
        notes="token = a Unity Catalog access token; read-only endpoint (no create, no stage-create, no commit); "
        "0.6.0 vends keys without an expiry and without a refresh endpoint (unitycatalog#1885, fixed by PR #1886)",
        no_remote_signing="Unity Catalog OSS's Iceberg REST endpoint has no S3 signer",
    ),
    Profile(
        name="nessie",
        description="Project Nessie, Iceberg REST endpoint",
        uri_template="https://<host>/iceberg",
        warehouse_hint="<warehouse-name> as configured in Nessie (prefix <branch>|<warehouse>)",
        auth="oauth2",
        oauth2_token_path=None,
        required_probes=VENDING_PROBES,
        emulated=True,
        notes="OAuth2 goes to your IdP: pass oauth2_server_uri=<idp token endpoint>; /credentials exists since 0.108 "
        "but is not advertised (nessie#10590); staged creates are not stored (refresh by re-stage)",
    ),
    Profile(
        name="gravitino",
        description="Apache Gravitino Iceberg REST server",
        uri_template="http://<host>:9001/iceberg",
        warehouse_hint="<catalog-name> served by the Gravitino Iceberg REST server",
        auth="oauth2",
        oauth2_token_path=None,
        required_probes=VENDING_PROBES,
        emulated=True,
        notes="OAuth2 goes to your IdP: pass oauth2_server_uri; an expired token answers 419, not 401; "
        "staged creates are not stored (refresh by re-stage); remote signing rejected",
        no_remote_signing="the Gravitino Iceberg REST server rejects remote-signing (apache/gravitino#10682)",
    ),
    Profile(
        name="glue",
        description="AWS Glue Data Catalog Iceberg REST endpoint",
        uri_template="https://glue.<region>.amazonaws.com/iceberg",
        warehouse_hint="<account-id> (the Glue catalog id; <account-id>:s3tablescatalog/<table-bucket> for S3 Tables through Glue)",
        auth="sigv4",
        signing_name="glue",
        delegation=None,
        required_probes=BASIC_PROBES + ("pyiceberg", "spark-read", "spark-append"),
        emulated=True,
        notes="uses your AWS credentials (default provider chain) for both catalog and data; no vended credentials; "
        "no stage-create, so a CTAS cannot be atomic; no views",
    ),
    Profile(
        name="s3tables",
        description="AWS S3 Tables Iceberg REST endpoint",
        uri_template="https://s3tables.<region>.amazonaws.com/iceberg",
        warehouse_hint="arn:aws:s3tables:<region>:<account-id>:bucket/<table-bucket>",
        auth="sigv4",
        signing_name="s3tables",
        delegation=None,
        required_probes=BASIC_PROBES + ("pyiceberg", "spark-read", "spark-append"),  # no spark-ctas: no stage-create
        emulated=True,
        notes="uses your AWS credentials (default provider chain) for both catalog and data; no vended credentials; "
        "no stage-create, so a CTAS cannot be atomic; a table drops only with its data (DROP TABLE ... PURGE)",
    ),
    Profile(
        name="r2",
        description="Cloudflare R2 Data Catalog",
        uri_template="https://catalog.cloudflarestorage.com/<account-id>/<bucket>",
        warehouse_hint="<account-id>_<bucket>",
        auth="token",
        region="auto",
        required_probes=BASIC_PROBES + ("vended-credentials",),
        emulated=True,
        notes="token = an R2 API token with Data Catalog + R2 storage permissions",
    ),
    Profile(
        name="rustfs",
        description="RustFS built-in Iceberg REST catalog",
        uri_template="http://<host>:9000/iceberg",
        warehouse_hint="<table-bucket>",
        auth="sigv4",
        signing_name="s3",
        region="us-east-1",
        path_style=True,
        notes="sign with a RustFS access/secret key (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); check the path against your RustFS release",
    ),
    Profile(
        name="rustfs-compat",
        description="RustFS, S3 Tables-compatible endpoint (same shape as MinIO AIStor)",
        uri_template="http://<host>:9000/_iceberg",
        warehouse_hint="<table-bucket>",
        auth="sigv4",
        signing_name="s3tables",
        region="us-east-1",
        path_style=True,
        alias_of="rustfs",
        notes="alias of rustfs at /_iceberg with signing name s3tables (the S3 Tables-compatible path); same server and keys as rustfs",
    ),
    Profile(
        name="minio-aistor",
        description="MinIO AIStor Tables",
        uri_template="https://<host>/_iceberg",
        warehouse_hint="<warehouse-name>",
        auth="sigv4",
        signing_name="s3tables",
        region="us-east-1",
        path_style=True,
        notes="sign with a MinIO access/secret key (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)",
    ),
    Profile(
        name="oss-tables",
        description="Alibaba Cloud OSS table buckets (Iceberg REST)",
        uri_template="https://<region>.oss-tables.aliyuncs.com/iceberg",
        warehouse_hint="<table-bucket ARN or name per Alibaba docs>",
        auth="sigv4",
        signing_name="oss-tables",
        notes="reference only, least certain of the set: confirm endpoint, signing name and region in Alibaba Cloud's docs",
    ),
)

PROFILES: dict[str, Profile] = {p.name: p for p in _PROFILES}


def get_profile(name: str) -> Profile:
    """Look up a profile by name, or raise ConfigError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown profile {name!r}; choose one of: {', '.join(PROFILES)}") from None
