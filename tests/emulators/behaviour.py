"""How each catalog family really behaves, as frozen dataclasses of named switches.

One ``Behaviour`` per family/release; each switch carries its reference in ``refs`` (issue/PR
strings from shared/README.md §6), so a new release is a one-line ``replace(...)``:

    POLARIS_1_8 = replace(POLARIS_MAIN, release="1.8.0")
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

# Switch values.
EXPIRING, NO_EXPIRY, NONE = "expiring", "no-expiry", "none"  # vends
ALL, COMMITTED = "all", "committed"  # refresh_endpoint / credentials_endpoint: which tables get an answer
TOP, OVERRIDES = "top", "overrides"  # where idempotency-key-lifetime sits in /v1/config
# signer: where a remote-signing table answer says to sign (Iceberg 1.10's s3.signer.* config, or
# 1.12's remote-signing-config field and the per-table .../sign route), or REJECTED (400)
S3_SIGNER, SIGNING_CONFIG, REJECTED = "s3.signer", "remote-signing-config", "rejected"
UPSTREAM = "upstream"  # config_defaults, error_words: as SeaweedFS answers
CATALOG_PROPERTIES = "catalog-properties"  # config_defaults: the catalog's properties (default-base-location)
EVERYWHERE, TABLE_CONFIG = "everywhere", "table-config"  # storage_settings: where s3.endpoint & co. sit
POLARIS = "polaris"  # error_words: Polaris's own answers
EXTERNAL, INTERNAL = "external", "internal"  # notifications: the catalog the emulator stands for

# A real Polaris 1.4.1's recorded answers (tests/emulators/observed/polaris-1.4.1.json, its keys quoted
# in the refs below as "recorded: <key>"); tests/unit/harness/test_emulated_polaris.py compares every one.
POLARIS_RECORDED = "Polaris 1.4.1 recorded (tests/emulators/observed/polaris-1.4.1.json"


# Iceberg's standard REST endpoints (org.apache.iceberg.rest.Endpoint), as servers advertise them.
ICEBERG_ENDPOINTS = tuple(f"{m} /v1/{{prefix}}/{p}" for m, p in (
    ("GET", "namespaces"), ("GET", "namespaces/{namespace}"), ("HEAD", "namespaces/{namespace}"),
    ("POST", "namespaces"), ("POST", "namespaces/{namespace}/properties"), ("DELETE", "namespaces/{namespace}"),
    ("POST", "transactions/commit"), ("GET", "namespaces/{namespace}/tables"),
    ("GET", "namespaces/{namespace}/tables/{table}"), ("HEAD", "namespaces/{namespace}/tables/{table}"),
    ("POST", "namespaces/{namespace}/tables"), ("POST", "namespaces/{namespace}/tables/{table}"),
    ("DELETE", "namespaces/{namespace}/tables/{table}"), ("POST", "tables/rename"),
    ("POST", "namespaces/{namespace}/register"), ("POST", "namespaces/{namespace}/tables/{table}/metrics"),
    ("GET", "namespaces/{namespace}/tables/{table}/credentials")))
VIEW_ENDPOINTS = tuple(f"{m} /v1/{{prefix}}/{p}" for m, p in (
    ("GET", "namespaces/{namespace}/views"), ("GET", "namespaces/{namespace}/views/{view}"),
    ("HEAD", "namespaces/{namespace}/views/{view}"), ("POST", "namespaces/{namespace}/views"),
    ("POST", "namespaces/{namespace}/views/{view}"), ("DELETE", "namespaces/{namespace}/views/{view}"),
    ("POST", "views/rename")))
CREDENTIALS_ENDPOINT = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
# Polaris's list (recorded, 35 entries; its source at 1.7.0 the same): Iceberg's without the credentials
# endpoint, which it serves all the same; its generic tables written without the leading slash, its
# policy API with it.
POLARIS_ENDPOINTS = (tuple(e for e in ICEBERG_ENDPOINTS if e != CREDENTIALS_ENDPOINT) + VIEW_ENDPOINTS
                     + tuple(f"{m} polaris/v1/{{prefix}}/namespaces/{{namespace}}/{p}" for m, p in (
                         ("GET", "generic-tables"), ("POST", "generic-tables"),
                         ("DELETE", "generic-tables/{generic-table}"), ("GET", "generic-tables/{generic-table}")))
                     + tuple(f"{m} /polaris/v1/{{prefix}}/{p}" for m, p in (
                         ("GET", "namespaces/{namespace}/policies"), ("POST", "namespaces/{namespace}/policies"),
                         ("GET", "namespaces/{namespace}/policies/{policy-name}"),
                         ("PUT", "namespaces/{namespace}/policies/{policy-name}"),
                         ("DELETE", "namespaces/{namespace}/policies/{policy-name}"),
                         ("PUT", "namespaces/{namespace}/policies/{policy-name}/mappings"),
                         ("POST", "namespaces/{namespace}/policies/{policy-name}/mappings"),
                         ("GET", "applicable-policies"))))


# Polaris 1.7.0 (recorded, 36 entries): 1.4.1's list and register-view.
POLARIS_1_7_ENDPOINTS = POLARIS_ENDPOINTS + ("POST /v1/{prefix}/namespaces/{namespace}/register-view",)


@dataclass(frozen=True)
class Behaviour:
    """Named switches for one catalog release; ``refs[switch]`` says where the behaviour is documented."""

    family: str  # row name in the matrix
    release: str
    profile: str  # the pyspark_catalog_ext profile a user picks for it
    warehouse: str  # what the user passes as warehouse
    prefix: str  # the prefix /v1/config answers (paths /v1/{prefix}/...)
    prefix_in: str = OVERRIDES  # "overrides" or "defaults"
    endpoints: tuple[str, ...] | None = None  # advertised `endpoints`, None = key absent
    auth: str = "oauth2"  # "oauth2" (client credentials at /v1/oauth/tokens), "token" (static bearer), "sigv4"
    scope: str | None = None  # OAuth2 scope the token endpoint insists on
    signing_name: str | None = None  # SigV4 service name in the credential scope
    expired_token_status: int = 401
    vends: str = EXPIRING  # EXPIRING, NO_EXPIRY (keys but no expires-at), NONE (job's own keys)
    refresh_endpoint: str = NONE  # client.refresh-credentials-endpoint advertised: NONE, ALL, COMMITTED (staged 404)
    credentials_endpoint: str = NONE  # GET .../credentials served without being advertised: NONE, ALL, COMMITTED
    stage_create: bool = True
    read_only: bool = False  # every mutation answered 405
    idempotency: tuple[str, str] | None = None  # (TOP|OVERRIDES, ISO-8601 lifetime) advertised
    idempotent_operations: tuple[str, ...] = ()  # operations the key covers ("all", or createTable, updateTable, ...)
    unknown_commit_status: int = 500  # what a commit whose outcome the server lost answers (used by step 4's fault)
    empty_storage_credential: bool = False  # an extra storage-credentials entry with an empty config
    remote_signing: bool = False  # documented only; what the emulator serves is `signer` (below)
    # Storage settings the catalog adds to every table config (a catalog in front of an S3-compatible
    # store with path-style access, as Polaris/Lakekeeper/Gravitino storage configs allow).
    table_config: Mapping[str, str] = field(default_factory=lambda: {"client.region": "us-east-1",
                                                                    "s3.path-style-access": "true"})
    refs: Mapping[str, str] = field(default_factory=dict)
    # A conditional load (If-None-Match) answered 304, i.e. "keep what you cached", expired keys included.
    stale_load_304: bool = False
    # A stage-create repeating an Idempotency-Key already seen answers 500 instead of replaying.
    replayed_stage_create_500: bool = False
    # Polaris's policy and notification APIs (served by tests/servers/policy_server.py's PolicyServer).
    polaris_apis: bool = False
    # Remote signing (X-Iceberg-Access-Delegation: remote-signing): NONE (header ignored), S3_SIGNER,
    # SIGNING_CONFIG or REJECTED.
    signer: str = NONE
    # DELETE of a table without purgeRequested=true answered 400: the table goes only with its data.
    purge_on_drop: bool = False
    # What /v1/config's `defaults` carry: UPSTREAM (SeaweedFS's warehouse) or CATALOG_PROPERTIES
    # (default-base-location, no warehouse).
    config_defaults: str = UPSTREAM
    # The stage-create answer names a metadata-location (there is no metadata file yet).
    stage_create_metadata_location: bool = True
    # Where s3.endpoint, path-style access and the region sit: EVERYWHERE (the table config and each
    # storage credential) or TABLE_CONFIG (only the table config, the region as client.region; a
    # storage credential holds only its keys and their expiry).
    storage_settings: str = EVERYWHERE
    # `expiration-time` beside s3.session-token-expires-at-ms in every vended config.
    expiration_time: bool = False
    # A credential cache: the same keys for a table location (load, re-stage, /credentials) while the
    # entry lives: the shorter of this many seconds and half the keys' remaining lifetime when minted.
    credential_cache_s: float | None = None
    # What creating an existing table answers: 200 (the create's answer again) or 409.
    create_existing_status: int = 200
    # Error answers: UPSTREAM (SeaweedFS's words) or POLARIS (qualified names, an empty-bodied 401, a
    # 404 for an unknown prefix, a 403 for the principal "nogrant", its remote-signing 400).
    error_words: str = UPSTREAM
    # A metrics report for a table that is not committed (staged) is answered 404.
    staged_metrics_404: bool = False
    # A Date header on every answer.
    date_header: bool = True
    # Notifications (polaris_apis): EXTERNAL (admitted into the reference server's mirror) or INTERNAL
    # (400: an internal catalog is not updated through notifications).
    notifications: str = EXTERNAL
    # Extra /v1/config overrides (Polaris 1.7.0: namespace-separator).
    config_overrides: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "refs", MappingProxyType(dict(self.refs)))
        object.__setattr__(self, "config_overrides", MappingProxyType(dict(self.config_overrides)))
        object.__setattr__(self, "table_config", MappingProxyType(dict(self.table_config)))

    @property
    def id(self) -> str:
        return f"{self.family}-{self.release}"


# What every Polaris release here shares, from the recorded 1.4.1 answers (the source at 1.7.0 says the
# same for each: no release is known to have changed them).
_POLARIS_RECORDED = {
    "endpoints": f"{POLARIS_RECORDED}: config.endpoints.*; polaris 1.7.0 source: no credentials endpoint)",
    "config_defaults": f"{POLARIS_RECORDED}: config.defaults)",
    "stage_create_metadata_location": f"{POLARIS_RECORDED}: stage-create.metadata-location)",
    "storage_settings": f"{POLARIS_RECORDED}: stage-create.config, stage-create.storage-credentials)",
    "expiration_time": f"{POLARIS_RECORDED}: stage-create.config)",
    "credential_cache_s": f"{POLARIS_RECORDED}, README: same keys while the cache entry lives; "
                          "polaris StorageCredentialCache: min(cache setting, remaining lifetime / 2))",
    "create_existing_status": f"{POLARIS_RECORDED}: 409 create existing table)",
    "error_words": f"{POLARIS_RECORDED}: 401 no token, 403 principal without grants, 404 missing table, "
                   "unknown prefix/warehouse, 409 commit failed requirement)",
    "staged_metrics_404": f"{POLARIS_RECORDED}, README: a staged table's metrics report answers 404)",
    "date_header": f"{POLARIS_RECORDED}, README: no Date header)",
    "credentials_endpoint": f"{POLARIS_RECORDED}: credentials.status 200, staged-credentials 404)",
    "refresh_endpoint": f"{POLARIS_RECORDED}: stage-create.config client.refresh-credentials-endpoint; "
                        "staged-credentials 404); polaris#2341, iceberg#13554",
    "signer": f"{POLARIS_RECORDED}: remote-signing-load.status 400); polaris PR #2280 (open)",
    "polaris_apis": "polaris spec/polaris-catalog-apis: policy-apis.yaml, notifications-api.yaml; "
                    f"{POLARIS_RECORDED}: policy.*, applicable(*))",
}
POLARIS_1_7 = Behaviour(
    family="polaris", release="1.7.0", profile="polaris", warehouse="polaris_catalog", prefix="polaris_catalog",
    scope="PRINCIPAL_ROLE:ALL", refresh_endpoint=COMMITTED, credentials_endpoint=COMMITTED,
    unknown_commit_status=400,
    refs={**_POLARIS_RECORDED,
          "unknown_commit_status": "polaris#5145 (400 up to 1.7.0)", "scope": "Polaris docs: PRINCIPAL_ROLE:ALL",
          "remote_signing": "polaris PR #2280 (open)",
          # Kept on purpose: a real Polaris admits notifications only into an external catalog (1.4.1
          # recorded 400 for its internal one); this emulator serves one prefix in both roles, so the
          # mirror path (governance/notifications.py) stays tested against the notification API.
          "notifications": "deliberately EXTERNAL: one prefix serves tables and admits notifications, which a real "
                           "Polaris does only for an external catalog (1.4.1 recorded 400 for an internal one)"},
    polaris_apis=True, signer=REJECTED, config_defaults=CATALOG_PROPERTIES, stage_create_metadata_location=False,
    storage_settings=TABLE_CONFIG, credential_cache_s=1800.0, create_existing_status=409,
    error_words=POLARIS, staged_metrics_404=True, date_header=False,
    # As a real 1.7.0 answered (shared/catalogs/polaris-1.7.0-observed.json, tests/emulators/observed/polaris-1.7.0.json):
    # no expiration-time (polaris#4173, #5070), the namespace-separator override, 36 endpoints (register-view).
    expiration_time=False, endpoints=POLARIS_1_7_ENDPOINTS, config_overrides={"namespace-separator": "%1F"},
)
POLARIS_MAIN = replace(
    POLARIS_1_7, release="main", unknown_commit_status=500, idempotency=(TOP, "PT5M"),
    idempotent_operations=("createTable", "updateTable"),
    refs={**POLARIS_1_7.refs, "unknown_commit_status": "polaris#5145 (main: 500)",
          "idempotency": "polaris#4912, #5037, #5118 (opt-in, PT5M, createTable/updateTable only)"},
)
# A real 1.7.0 run with polaris.idempotency.enabled=true (shared/catalogs/polaris-1.7.0-observed.json, `extra`):
# one lifetime advertised at the top of /v1/config, but only createTable and updateTable without assert-create
# replayed; a namespace create, a staged create's commit, a transaction, drops and renames are not.
POLARIS_1_7_IDEMPOTENT = replace(
    POLARIS_1_7, release="1.7.0-idempotency", idempotency=(TOP, "PT5M"), idempotent_operations=("createTable", "updateTable"),
    refs={**POLARIS_1_7.refs, "idempotency": "polaris-1.7.0-observed.json extra: createTable and updateTable replayed, "
                                             "assert-create commit 409, createNamespace 409, commitTransaction ran twice"},
)
# The release a real server was recorded from: the emulator is checked against every recorded answer.
POLARIS_1_4 = replace(
    POLARIS_1_7, release="1.4.1", warehouse="pcat", prefix="pcat", notifications=INTERNAL,
    expiration_time=True, endpoints=POLARIS_ENDPOINTS, config_overrides={},
    refs={**POLARIS_1_7.refs, "unknown_commit_status": "polaris#5145 (400 up to 1.7.0)",
          "notifications": f"{POLARIS_RECORDED}, README: 400 Cannot update internal catalog via notifications)",
          "idempotency": f"{POLARIS_RECORDED}: config.idempotency-key-lifetime false; 1.4.1 has none)"},
)
#: Families whose emulation is checked answer by answer against a real server's recording.
CHECKED_AGAINST_RECORDING: Mapping[str, str] = MappingProxyType({POLARIS_1_4.id: "tests/emulators/observed/polaris-1.4.1.json"})
# (POLARIS_1_7_IDEMPOTENT, defined below, against tests/emulators/observed/polaris-1.7.0.json: tests/unit/harness/test_emulated_polaris.py.)
LAKEKEEPER_0_13 = Behaviour(
    family="lakekeeper", release="0.13.4", profile="lakekeeper", warehouse="lk_warehouse",
    prefix="01890f4e-0000-7000-8000-00000000000a",  # Lakekeeper's prefix is the warehouse id
    refresh_endpoint=ALL, credentials_endpoint=ALL, idempotency=(OVERRIDES, "P1W"),
    idempotent_operations=("all",),
    refs={"refresh_endpoint": "lakekeeper#1546 (staged tables stored, /credentials serves them)",
          "idempotency": "lakekeeper#1671, #1952 (inside overrides, P1W)",
          "stale_load_304": "lakekeeper#1862 (a 304 to a conditional loadTable: the cached, expired keys)",
          "replayed_stage_create_500": "lakekeeper#1959 (a replayed staged createTable answered 500)",
          "signer": "lakekeeper#1820 (s3.signer.uri/endpoint, and signer.* for Iceberg 1.11)"},
    stale_load_304=True, replayed_stage_create_500=True, signer=S3_SIGNER,
)
# The same server answering with an extra storage-credentials entry whose config is empty.
LAKEKEEPER_0_13_EMPTY_CREDENTIAL = replace(
    LAKEKEEPER_0_13, release="0.13.4+empty-credential", empty_storage_credential=True,
    refs={**LAKEKEEPER_0_13.refs, "empty_storage_credential": "lakekeeper#1923 (shape assumed: an entry with config {})"},
)
UNITY_0_6 = Behaviour(
    family="unity", release="0.6.0", profile="unity", warehouse="unity", prefix="catalogs/unity",
    auth="token", vends=NO_EXPIRY, stage_create=False, read_only=True,
    refs={"vends": "unitycatalog#1885 (no expiry, no refresh endpoint)", "read_only": "UC OSS 0.6 Iceberg REST is read-only",
          "signer": "UC OSS 0.6: no remote signing"},
    signer=REJECTED,
)
UNITY_0_6_REFRESH = replace(
    UNITY_0_6, release="0.6.0+pr1886", vends=EXPIRING, refresh_endpoint=ALL, credentials_endpoint=ALL,
    refs={**UNITY_0_6.refs, "vends": "unitycatalog PR #1886 (expiry + refresh endpoint, after 0.6.0)"},
)
NESSIE = Behaviour(
    family="nessie", release="0.108", profile="nessie", warehouse="warehouse", prefix="main%7Cwarehouse",  # Nessie: <branch>|<warehouse>, URL-encoded
    prefix_in="defaults", credentials_endpoint=COMMITTED, remote_signing=True,
    refs={"credentials_endpoint": "nessie#10590 (/credentials exists, not advertised; staged not stored)",
          "signer": "nessie#8871 (s3.signer.uri + s3.signer.endpoint)"},
    signer=S3_SIGNER,
)
GRAVITINO = Behaviour(
    family="gravitino", release="1.3.0", profile="gravitino", warehouse="gravitino_catalog", prefix="gravitino_catalog",
    expired_token_status=419, refresh_endpoint=COMMITTED, credentials_endpoint=COMMITTED,
    refs={"expired_token_status": "Gravitino answers 419 for an expired token",
          "refresh_endpoint": "Gravitino 1.3 refresh endpoints; staged creates not stored",
          "idempotency": "gravitino#12048 (not yet)",
          "signer": "Gravitino 1.3 rejects remote-signing (gravitino#10682; PR #11854 closed)"},
    signer=REJECTED,
)
GLUE = Behaviour(
    family="glue", release="2026", profile="glue", warehouse="123456789012", prefix="catalogs/123456789012",
    auth="sigv4", signing_name="glue", vends=NONE, stage_create=False,
    refs={"vends": "Glue: no vended credentials, the job's own AWS keys", "stage_create": "Glue: no stage-create"},
)
R2 = Behaviour(
    family="r2", release="2026", profile="r2", warehouse="acc_bucket", prefix="acc_bucket", auth="token",
    refs={"auth": "R2 Data Catalog: bearer API token, vended credentials"},
)

# S3 Tables' Iceberg REST endpoint: SigV4 (s3tables), the table bucket's ARN as warehouse (URL-encoded
# as prefix), the job's own keys, no stage-create (so no atomic CTAS) and a drop only with purge.
# stage_create is an assumption from outside shared/README.md §6 (which is silent on it): AWS's S3 Tables
# Iceberg REST docs, as quoted in ClickHouse PR #113505, and the 400 duckdb-iceberg#1294 reports.
S3_TABLES = Behaviour(
    family="s3tables", release="2026", profile="s3tables", warehouse="arn:aws:s3tables:us-east-1:123456789012:bucket/tb",
    prefix="arn%3Aaws%3As3tables%3Aus-east-1%3A123456789012%3Abucket%2Ftb", auth="sigv4", signing_name="s3tables",
    vends=NONE, stage_create=False, purge_on_drop=True,
    refs={"vends": "S3 Tables: no vended credentials, the job's own AWS keys",
          "stage_create": "S3 Tables: no stage-create, so no atomic CTAS (AWS S3 Tables Iceberg REST docs, quoted in "
                          "ClickHouse PR #113505; 400 'Stage-create is currently not supported', duckdb-iceberg#1294)",
          "purge_on_drop": "S3 Tables: a table is dropped only with its data (purgeRequested=true)"},
)

FAMILIES: tuple[Behaviour, ...] = (POLARIS_1_4, POLARIS_1_7, POLARIS_MAIN, LAKEKEEPER_0_13, UNITY_0_6, UNITY_0_6_REFRESH, NESSIE,
                                   GRAVITINO, GLUE, S3_TABLES, R2)

# Lakekeeper signing the Iceberg 1.12 way: remote-signing-config in the table answer, the per-table route.
LAKEKEEPER_0_13_SIGNING_CONFIG = replace(
    LAKEKEEPER_0_13, release="0.13.4+remote-signing-config", signer=SIGNING_CONFIG,
    refs={**LAKEKEEPER_0_13.refs, "signer": "lakekeeper#1961, iceberg#16822/#17709 (remote-signing-config, .../sign)"},
)
