"""State shared by the probes of one doctor run: the catalog client, the run's namespace, the
objects created (and how to remove them), and every secret seen (so no output can carry one)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark_catalog_ext.catalog.exchanges import Exchange
from pyspark_catalog_ext.catalog.profiles import Profile
from pyspark_catalog_ext.catalog.rest import CatalogClient
from pyspark_catalog_ext.catalog.storage_keys import (
    CLIENT_REGION,
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_EXPIRY,
    S3_PATH_STYLE_ACCESS,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    STORAGE_REFRESH_TOKEN,
)
from pyspark_catalog_ext.errors import CatalogExtError, CatalogNotFoundError, redact
from pyspark_catalog_ext.refresh.vended import expiry_ms
from pyspark_catalog_ext.secret_keys import is_secret_key

__all__ = ["ProbeContext", "Cleanup", "Interrupts", "Terminated", "SecretBag", "VendedCredential", "TABLE_SCHEMA", "create_updates", "fingerprint", "one_line"]

log = logging.getLogger(__name__)

#: Schema of every table the doctor creates through REST.
TABLE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "required": False, "type": "long"},
        {"id": 2, "name": "note", "required": False, "type": "string"},
    ],
}


def create_updates(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The updates of a create-table commit (`assert-create`) built from staged metadata."""
    schemas = metadata.get("schemas") or [metadata.get("schema")]
    specs = metadata.get("partition-specs") or [{"spec-id": 0, "fields": []}]
    orders = metadata.get("sort-orders") or [{"order-id": 0, "fields": []}]
    return [
        {"action": "assign-uuid", "uuid": metadata["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": metadata.get("format-version", 2)},
        {"action": "add-schema", "schema": schemas[0], "last-column-id": metadata.get("last-column-id", 2)},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": specs[0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": orders[0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": metadata["location"]},
        {"action": "set-properties", "updates": {"created-by": "pyspark-catalog-ext doctor"}},
    ]


def fingerprint(value: str | None) -> str | None:
    """A short, non-reversible tag for a secret (to show rotation without showing the key)."""
    if not value:
        return None
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:10]


def one_line(text: Any, limit: int = 300) -> str:
    """Redacted single line, truncated."""
    line = redact(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 3] + "..."


class SecretBag:
    """Every secret value the run has seen; `scrub()` masks them in any text."""

    def __init__(self, values: Iterable[str | None] = ()) -> None:
        self._values: set[str] = set()
        self._lock = threading.Lock()
        for value in values:
            self.add(value)

    def add(self, value: str | None) -> None:
        """Remember a secret (values shorter than 4 characters are ignored)."""
        if value and len(str(value)) >= 4:
            with self._lock:
                self._values.add(str(value))

    def add_config(self, config: Mapping[str, Any] | None) -> None:
        """Remember the secret values of a (vended) config map."""
        for key, value in (config or {}).items():
            if isinstance(value, str) and is_secret_key(key):
                self.add(value)

    def add_load_result(self, body: Mapping[str, Any] | None) -> None:
        """Remember secrets of a LoadTableResult / LoadCredentialsResponse."""
        if not body:
            return
        self.add_config(body.get("config"))
        for cred in body.get("storage-credentials") or []:
            if isinstance(cred, Mapping):
                self.add_config(cred.get("config"))
                self.add(cred.get(STORAGE_REFRESH_TOKEN))

    def scrub(self, text: str) -> str:
        """`text` with every known secret replaced by ***."""
        with self._lock:
            values = sorted(self._values, key=len, reverse=True)
        for value in values:
            if value in text:
                text = text.replace(value, "***")
        return text

    def __contains__(self, text: str) -> bool:
        with self._lock:
            return any(v in text for v in self._values)


def split_location(location: str) -> tuple[str, str]:
    """("bucket", "key/prefix") of an s3:// (or s3a://) location, without a trailing slash."""
    rest = location.split("://", 1)[-1]
    bucket, _, key = rest.partition("/")
    return bucket, key.strip("/")


@dataclass
class VendedCredential:
    """One set of vended S3 credentials (from `storage-credentials` or the table `config`)."""

    prefix: str | None
    source: str  # "storage-credentials" or "config"
    config: dict[str, str] = field(repr=False)
    # The `config` of the table answer the credential came in (empty for a bare /credentials answer):
    # where Polaris puts s3.endpoint, path-style access and the region.
    table_config: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def access_key_id(self) -> str | None:
        return self.config.get(S3_ACCESS_KEY_ID)

    @property
    def expires_at_ms(self) -> int | None:
        return expiry_ms(self.config.get(S3_EXPIRY))

    @property
    def refresh_token(self) -> str | None:
        return self.config.get(STORAGE_REFRESH_TOKEN)

    def public(self) -> dict[str, Any]:
        """Secret-free description: prefix, key names, expiry, key fingerprint."""
        expires = self.expires_at_ms
        return {
            "source": self.source,
            "prefix": self.prefix,
            "keys": sorted(self.config),
            "access_key_fingerprint": fingerprint(self.access_key_id),
            "expires_at": _iso(expires / 1000) if expires else None,
            "lifetime_s": round(expires / 1000 - time.time()) if expires else None,
        }


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (cleanup first) but exiting 143."""


class Interrupts:
    """Ctrl-C / SIGTERM handling for a run.

    Normally a signal raises KeyboardInterrupt (Terminated for SIGTERM) at once. Inside
    `deferred(on_signal)` (Spark statements) the first signal only records itself and runs
    `on_signal` in a thread (cancel the Spark jobs): interrupting a py4j call would leave its
    connection out of step, so the statement is let to end (cancelled) and `check()` raises right
    after. A second signal raises at once. `install()` must be called again after PySpark
    replaced the SIGINT handler; `restore()` puts the original handlers back."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._original: dict[int, Any] = {}
        self._deferred: Callable[[], Any] | None = None

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._original.setdefault(sig, signal.getsignal(sig))
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, frame: Any) -> None:
        first = self.signal_name is None
        if first:
            self.signal_name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
        callback = self._deferred
        if first and callback is not None:
            threading.Thread(target=_quietly(callback), name="doctor-cancel", daemon=True).start()
            return
        self.check()

    @contextlib.contextmanager
    def deferred(self, on_signal: Callable[[], Any]) -> Iterator[None]:
        """Within the block, the first signal runs `on_signal` (in a thread) instead of raising."""
        self._deferred = on_signal
        try:
            yield
        finally:
            self._deferred = None
        self.check()

    def check(self) -> None:
        """Raise KeyboardInterrupt (Terminated for SIGTERM) if a signal arrived."""
        if self.signal_name == "SIGTERM":
            raise Terminated()
        if self.signal_name:
            raise KeyboardInterrupt()

    def restore(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, handler in self._original.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._original.clear()


def _quietly(fn: Callable[[], Any]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except Exception:
            log.debug("interrupt callback failed", exc_info=True)

    return run


class Cleanup:
    """LIFO list of undo actions, run once at the end (also after a failure or Ctrl-C).

    While it runs SIGINT/SIGTERM are ignored (a second Ctrl-C must not leave half-removed
    objects); every action is attempted, and each outcome is recorded."""

    def __init__(self) -> None:
        self._actions: list[tuple[str, Callable[[], str | None]]] = []
        self.records: list[dict[str, Any]] = []
        self.done = False

    def add(self, label: str, action: Callable[[], str | None]) -> None:
        """Register `action` (returns an optional note) to run at cleanup time."""
        self._actions.append((label, action))

    def run(self) -> list[dict[str, Any]]:
        """Run every action, last registered first. Returns the records."""
        if self.done:
            return self.records
        self.done = True
        previous: dict[Any, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, signal.SIG_IGN)
        try:
            while self._actions:
                label, action = self._actions.pop()
                t0 = time.perf_counter()
                try:
                    note = action()
                    self.records.append({"action": label, "ok": True, "note": note,
                                         "elapsed_ms": round((time.perf_counter() - t0) * 1000, 1)})
                except Exception as exc:  # cleanup goes on whatever happens
                    log.debug("cleanup %s failed", label, exc_info=True)
                    self.records.append({"action": label, "ok": False, "note": one_line(f"{type(exc).__name__}: {exc}"),
                                         "elapsed_ms": round((time.perf_counter() - t0) * 1000, 1)})
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self.records

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.records)


class ProbeContext:
    """Everything a probe needs; probes hand results to later ones through `shared`."""

    def __init__(
        self,
        *,
        profile: Profile,
        props: dict[str, str],
        connection: dict[str, Any],
        client: CatalogClient,
        namespace: str,
        secrets: SecretBag,
        cleanup: Cleanup,
        shim: bool = True,
        work_dir: str | None = None,
        interrupts: Interrupts | None = None,
    ) -> None:
        self.profile = profile
        self.props = props
        self.connection = connection
        self.client = client
        self.namespace = namespace
        self.secrets = secrets
        self.cleanup = cleanup
        self.shim = shim
        self.work_dir = work_dir
        self.interrupts = interrupts or Interrupts()
        self.shared: dict[str, Any] = {}
        self.results: dict[str, Any] = {}  # probe id -> ProbeResult, filled by the runner
        self.http: list[dict[str, Any]] = []  # exchanges of the probe currently running
        self.spark: Any = None
        self._staged_cleanup_registered: set[str] = set()
        self._staged: dict[str, Mapping[str, Any]] = {}

    # -- evidence -----------------------------------------------------------------------------
    def record_exchange(self, ex: Exchange) -> None:
        """`CatalogClient.on_exchange` hook: collect the current probe's HTTP evidence."""
        self.http.append(ex.as_dict())

    # -- helpers for probes -------------------------------------------------------------------
    def table_body(self, name: str, location: str | None = None) -> dict[str, Any]:
        """A CreateTableRequest for `name` with the doctor's two-column schema."""
        # "stage-create": false said outright, as Iceberg's own clients do: Nessie 0.99 answers a body
        # without it with 500.
        body: dict[str, Any] = {"name": name, "schema": TABLE_SCHEMA, "stage-create": False,
                                "properties": {"created-by": "pyspark-catalog-ext doctor"}}
        if location:
            body["location"] = location
        return body

    def create_table(self, name: str) -> dict[str, Any]:
        """Create (commit) a table in the run's namespace; the namespace sweep drops it."""
        result = self.client.create_table_json(self.namespace, self.table_body(name))
        self.secrets.add_load_result(result)
        return result

    def load_table(self, name: str, *, delegation: str | None = None) -> dict[str, Any]:
        result = self.client.load_table_json((self.namespace, name), delegation=delegation)
        self.secrets.add_load_result(result)
        return result

    def stage_table(self, name: str, location: str | None = None) -> dict[str, Any]:
        """Stage-create `name` (invisible until committed); its data objects are removed at cleanup."""
        result = self.client.create_table_json(self.namespace, self.table_body(name, location), stage_create=True)
        self.secrets.add_load_result(result)
        self._register_staged_cleanup(name, result)
        return result

    def _register_staged_cleanup(self, name: str, result: Mapping[str, Any]) -> None:
        """At cleanup, a staged table that was never committed has its objects removed (with its
        vended credentials) and is then committed, so the namespace sweep drops it: the REST
        spec has no way to abort a staged create, and a server may keep a record of it."""
        self._staged[name] = result
        if name in self._staged_cleanup_registered:
            return
        self._staged_cleanup_registered.add(name)
        self.cleanup.add(f"finish staged table {self.namespace}.{name}", lambda: self.finish_staged(name))

    def finish_staged(self, name: str, result: Mapping[str, Any] | None = None) -> str:
        """Remove the objects of a never-committed staged table and commit it (see above)."""
        if self.client.has_table((self.namespace, name)):
            return "committed: the namespace sweep drops it"
        latest = result or self._staged[name]
        metadata = latest.get("metadata") or {}
        creds = self.credentials(latest)
        notes = []
        if creds and metadata.get("location"):
            notes.append(self._delete_objects(creds[0], metadata["location"]))
        self.client.commit_table_json((self.namespace, name), [{"type": "assert-create"}], create_updates(metadata))
        notes.append("committed for the namespace sweep")
        return "; ".join(notes)

    def credentials(self, body: Mapping[str, Any] | None) -> list[VendedCredential]:
        """Vended S3 credentials in a load/create response: `storage-credentials` first (longest
        prefix first), then the table `config` if it carries keys."""
        out: list[VendedCredential] = []
        if not body:
            return out
        table_config = {str(k): str(v) for k, v in (body.get("config") or {}).items()}
        entries = [c for c in body.get("storage-credentials") or [] if isinstance(c, Mapping)]
        for cred in sorted(entries, key=lambda c: len(str(c.get("prefix") or "")), reverse=True):
            config = {str(k): str(v) for k, v in (cred.get("config") or {}).items()}
            if cred.get(STORAGE_REFRESH_TOKEN):
                config[STORAGE_REFRESH_TOKEN] = str(cred[STORAGE_REFRESH_TOKEN])
            if config.get(S3_ACCESS_KEY_ID):
                out.append(VendedCredential(cred.get("prefix"), "storage-credentials", config, table_config))
        if table_config.get(S3_ACCESS_KEY_ID):
            out.append(VendedCredential(None, "config", table_config, table_config))
        return out

    def s3_client(self, cred: VendedCredential) -> Any:
        """A boto3 S3 client using only the vended keys (never the caller's own AWS credentials)."""
        import boto3
        from botocore.config import Config

        s3 = self.s3_settings(cred)
        session = boto3.session.Session()  # an empty session: no profile / env credentials are mixed in
        return session.client(
            "s3",
            endpoint_url=s3["endpoint"],
            region_name=s3["region"],
            aws_access_key_id=cred.config.get(S3_ACCESS_KEY_ID),
            aws_secret_access_key=cred.config.get(S3_SECRET_ACCESS_KEY),
            aws_session_token=cred.config.get(S3_SESSION_TOKEN),
            config=Config(
                s3={"addressing_style": "path" if s3["path_style"] else "auto"},
                retries={"max_attempts": 1, "mode": "standard"},
                connect_timeout=5,
                read_timeout=20,
            ),
        )

    def _delete_objects(self, cred: VendedCredential, location: str) -> str:
        """Remove the objects under `location` with `cred` (cleanup of a never-committed staged table)."""
        try:
            s3 = self.s3_client(cred)
        except ImportError:
            return "boto3 not installed; staged objects left"
        bucket, path = split_location(location)
        from botocore.exceptions import ClientError

        try:
            listing = s3.list_objects_v2(Bucket=bucket, Prefix=f"{path}/", MaxKeys=1000)
        except ClientError as exc:
            code = ((getattr(exc, "response", None) or {}).get("Error") or {}).get("Code") or type(exc).__name__
            return f"could not list {location} ({code})"
        keys = [obj["Key"] for obj in listing.get("Contents") or []]
        for key in keys:
            try:
                s3.delete_object(Bucket=bucket, Key=key)
            except ClientError:
                pass
        return f"removed {len(keys)} object(s)"

    def s3_settings(self, cred: VendedCredential) -> dict[str, Any]:
        """Endpoint, region and addressing style for boto3, resolved as Iceberg's S3FileIO resolves
        them: the catalog properties, overridden by the table answer's `config` (where Polaris puts
        s3.endpoint, path-style access and the region), overridden by the credential's own config
        (S3FileIO.clientByPrefix layers a storage credential over the table's properties).
        `endpoint_from` says which of them named the endpoint (None: AWS's own)."""
        layers = (("storage-credentials" if cred.source == "storage-credentials" else "table config", cred.config),
                  ("table config", cred.table_config), ("catalog properties", self.props))

        def pick(*keys: str) -> tuple[str | None, str | None]:
            for where, layer in layers:
                for key in keys:
                    if layer.get(key):
                        return str(layer[key]), where
            return None, None

        endpoint, endpoint_from = pick(S3_ENDPOINT)
        region = pick(CLIENT_REGION, S3_REGION)[0] or "us-east-1"
        path_style = (pick(S3_PATH_STYLE_ACCESS)[0] or "false").lower() == "true"
        return {"endpoint": endpoint, "endpoint_from": endpoint_from, "region": region, "path_style": path_style}

    # -- cleanup of the namespace ---------------------------------------------------------------
    def sweep_namespace(self) -> str:
        """Drop every table in the run's namespace (purge), then the namespace; verify it is gone."""
        client = self.client
        try:
            tables = client.tables(self.namespace)
        except CatalogNotFoundError:
            return "namespace was not created"
        dropped = []
        for ident in tables:
            try:
                client.remove_table(ident, purge=True)
                dropped.append(ident[-1])
            except CatalogNotFoundError:
                pass
        client.remove_namespace(self.namespace)
        if (self.namespace,) in client.namespaces():
            raise CatalogExtError(f"namespace {self.namespace} is still listed after the drop")
        return f"dropped {len(dropped)} table(s) and namespace {self.namespace}"
