"""The leak sweep's engine: every URL-valued key (`tests.url_keys`), injected through each channel
of an `Injector` catalog, pointing at its own loopback `Attacker` (one origin per key, so whatever
reaches an attacker names its key), while a client runs its usual scenario against the catalog.
The attackers must receive no request that carries a credential.

What counts as a credential (`leaks`):

* always, the catalog's: an `Authorization` header other than S3's SigV4 (a bearer token, Basic
  client credentials), `Proxy-Authorization`, `Cookie`, and anywhere in the request (URL, headers,
  body, as sent, URL-encoded, or inside Basic) the OAuth client secret, a `header.*` value or any
  token the catalog handed out;
* always, the user's own and the machine's: anywhere in the request, a storage credential the
  user configured (S3 keys, an ADLS account key, a GCS token: `Sweep.user_secrets`) or an ambient
  one (AWS's, Azure's and Google's default chains: `tests.leak_stores.Ambient`), a SigV4 signature
  included (its `Credential=` names the key id); any `Authorization` that is not one of the
  catalog's storage credentials (an account key's `SharedKey` signature, an ADC token);
* in the `table-properties` and `redirect` channels, the catalog's storage credentials too: a SigV4
  `Authorization`, `X-Amz-Security-Token`, `X-Amz-Credential`, a vended key, SAS or GCS token.
  Through `/v1/config` and a table's config it is the catalog itself that names its storage, and
  the credentials it vends for that storage are its own (that a store's endpoint is not on the
  catalog's origin is normal); table properties are data anyone allowed to alter a table can write.

Keys are injected in batches, not one run each: a run where a key's attacker was contacted, or
whose error names that attacker's origin (a refusal), settles that key, and the rest run again
without it; a run that fails without touching any attacker is split in halves. Every key so ends
either settled in a run of its own making or idle in a run that completed (the client did not use
it). `CaseReport` keeps each run."""

from __future__ import annotations

import contextlib
import re
import secrets
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyspark_catalog_ext.catalog import trust_rules
from pyspark_catalog_ext.lakehouse.signer import CLIENT_ID, SigningCatalogProxy
from pyspark_catalog_ext.spark.conf import catalog_properties
from tests.leak_stores import STORE_MODES, Ambient, StoreInjector, user_s3_keys
from tests.servers.attacker import CREDENTIAL_HEADERS, Attacker, Received
from tests.servers.injector import KINDS, Injector
from tests.url_keys import UrlKey, url_keys

STORAGE_CHANNELS = ("table-properties", "redirect")
#: A custom `header.*` setting every client sends the catalog: its value is a credential too.
HEADER = "X-Sweep-Secret"
HEADER_VALUE = "hdr-" + secrets.token_urlsafe(18)

def leaks(received: Received, catalog_secrets: Sequence[str], storage_secrets: Sequence[str], storage: bool,
          user_secrets: Sequence[str] = (), injected: Sequence[str] = ()) -> list[str]:
    """What in `received` is a credential (see the module docstring); [] if nothing. `injected`: the
    values the run injected, no secret (a `gcs.oauth2.token` set to an attacker's URL is sent as a
    bearer token of that URL)."""
    found = []
    text = received.text()
    for name, value in received.headers:
        lower = name.lower()
        # The catalog's own storage credential: S3's SigV4, or a vended token (a GCS bearer token).
        vended = value.startswith("AWS4-HMAC-SHA256 ") or any(s and s in value for s in storage_secrets)
        if lower in CREDENTIAL_HEADERS and value.partition(" ")[2].strip() in injected:
            continue
        if lower in CREDENTIAL_HEADERS and not vended:
            found.append(f"{name} header")
        elif storage and (lower == "x-amz-security-token" or (lower in CREDENTIAL_HEADERS and vended)):
            found.append(f"{name} header (storage)")
    if storage and re.search(r"(?i)[?&]x-amz-(credential|security-token)=", received.target):
        found.append("presigned storage credentials")
    hits = Received(received.method, received.target, [], text.encode())
    found += [f"catalog {what}" for what in hits.credentials(catalog_secrets)]
    found += [f"user's or ambient {what}" for what in hits.credentials(user_secrets)]
    if storage:
        found += [f"storage {what}" for what in hits.credentials(storage_secrets)]
    return found


@dataclass
class Run:
    batch: list[str]
    seconds: float
    error: str | None = None
    touched: list[str] = field(default_factory=list)  # keys whose attacker was contacted or named in the error
    leaked: dict[str, list[str]] = field(default_factory=dict)  # key -> "request line: what it carried"
    foreign: list[str] = field(default_factory=list)  # requests another process sent (see tests/servers/attacker.py)
    store_saw: list[str] = field(default_factory=list)  # the credentials the table's store stand-in received


@dataclass
class CaseReport:
    client: str
    mode: str
    channel: str
    names: list[str]
    runs: list[Run] = field(default_factory=list)
    baseline: Run | None = None  # the scenario with nothing injected

    @property
    def leaked(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for run in self.runs:
            for key, what in run.leaked.items():
                out.setdefault(key, []).extend(what)
        return out

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.runs) + (self.baseline.seconds if self.baseline else 0.0)

    def outcome(self, name: str) -> str:
        """"touched" (the client reached for it), "error" (alone, the run failed without touching
        it) or "idle" (a completed run did not use it)."""
        for run in self.runs:
            if name in run.touched:
                return "touched"
        last = [r for r in self.runs if name in r.batch][-1]
        return "error" if last.error and _shape(last.error) != _shape(self.baseline.error if self.baseline else None) else "idle"

    def summary(self) -> str:
        counts: dict[str, list[str]] = {}
        for name in self.names:
            counts.setdefault(self.outcome(name), []).append(name)
        parts = [f"{k} {len(v)}" + (f" ({', '.join(v)})" if k != "idle" else "") for k, v in sorted(counts.items())]
        alone = f"; on its own the scenario fails: {self.baseline.error[:160]}" if self.baseline and self.baseline.error else ""
        return (f"{self.client}/{self.mode}/{self.channel}: {len(self.names)} x, {len(self.runs)} runs, {self.seconds:.1f}s; "
                + "; ".join(parts) + alone)

    def details(self) -> str:
        """Each run: its keys, time, what it touched and its error (for a failure or -s)."""
        return "\n".join(f"  run {i}: {len(r.batch)} keys, {r.seconds:.1f}s, touched {r.touched}, "
                         f"error {(r.error or '-')[:300]}" + (f", not from this test's processes: {r.foreign[:3]}" if r.foreign else "")
                         for i, r in enumerate(self.runs))

    def failure(self) -> str:
        lines = [f"{key}: {what}" for key, whats in sorted(self.leaked.items()) for what in whats[:3]]
        return f"{self.summary()}\ncredentials reached the attacker:\n" + "\n".join(lines) + "\n" + self.details()


def _is_credential_key(key: str) -> bool:
    """A key through which a catalog vends a storage credential (trust-rules.json's list)."""
    group = trust_rules.spec()["server-settable"]["storage"]["credentials"]
    return key in group["keys"] or key.startswith(tuple(group["prefixes"]))


def _shape(error: str | None) -> str | None:
    """An error without its numbers and ids: the same failure in two runs has one shape."""
    return re.sub(r"[0-9a-f]{8,}|\d+", "#", error)[:200] if error else None


@contextlib.contextmanager
def attackers(keys: dict[str, UrlKey]) -> Iterator[dict[str, Attacker]]:
    """One started attacker per key and per redirect kind ("redirect:<kind>"), stopped after."""
    started: dict[str, Attacker] = {}
    try:
        for name in [*keys, *(f"redirect:{k}" for k in KINDS)]:
            started[name] = Attacker().start()
        yield started
    finally:
        for attacker in started.values():
            attacker.stop()


class Sweep:
    """The injecting catalog of one storage mode, and the attackers its injections point at (one
    case runs at a time, so the modes share them)."""

    def __init__(self, injector: Injector, attackers: dict[str, Attacker], keys: dict[str, UrlKey],
                 extra_secrets: Sequence[str] = (), connection: dict[str, Any] | None = None,
                 user_properties: dict[str, str] | None = None, user_secrets: Sequence[str] = (),
                 ambient: Ambient | None = None) -> None:
        self.injector = injector
        self.keys = keys
        self.extra_secrets = [s for s in extra_secrets if s]
        #: How clients connect to the injector (uri, warehouse, credential, delegation).
        self.connection = dict(connection or {})
        #: What else the user's catalog properties hold (their own store credentials and endpoints).
        self.user_properties = dict(user_properties or {})
        self._user_secrets = [s for s in user_secrets if s]
        self.ambient = ambient
        self._attackers = attackers

    @property
    def store(self) -> Attacker | None:
        """The stand-in for an ADLS or GCS table's store (tests/leak_stores.py); None on S3."""
        return getattr(self.injector, "store", None)

    def user_secrets(self) -> list[str]:
        """The user's own credentials and the machine's (tokens its ADC got so far included)."""
        return [*self._user_secrets, *(self.ambient.secrets() if self.ambient else [])]

    def values(self, batch: Sequence[str]) -> dict[str, str]:
        """The injected settings: each key's attacker URL, without a path (a proxy setting refuses one;
        the port alone names the key), or for a host key the host, and the port in its port key."""
        out: dict[str, str] = {}
        for key in batch:
            attacker, entry = self._attackers[key], self.keys[key]
            if entry.port_key:
                out[key], out[entry.port_key] = "127.0.0.1", str(attacker.port)
            elif entry.scheme_key:
                out[key], out[entry.scheme_key] = f"127.0.0.1:{attacker.port}", "http"
            else:
                out[key] = attacker.url
        return out

    def arm(self, channel: str, batch: Sequence[str]) -> None:
        if channel == "redirect":
            self.injector.arm(channel, redirects={k: self._attackers[f"redirect:{k}"].url for k in batch})
        else:
            self.injector.arm(channel, values=self.values(batch))

    def run_case(self, client: str, mode: str, channel: str, scenario: Callable[[], Any],
                 only: Collection[str] | None = None) -> CaseReport:
        """Run `scenario` (a client's usual work against the injector; what it returns, such as a
        CLI's output, is searched for the attackers' origins like its error) over every key (of `only`)."""
        names = list(KINDS) if channel == "redirect" else [k for k in self.keys if only is None or k in only]
        report = CaseReport(client, mode, channel, names)
        # A vended credential's key (`gcs.oauth2.token`) makes the client take the injected value for
        # the catalog's credential, which would mask, in the same run, an endpoint that gets the user's
        # own: those keys run in a batch of their own.
        vended = [k for k in names if _is_credential_key(k)]
        pending = [b for b in ([k for k in names if k not in vended], vended) if b]
        while pending:
            batch = pending.pop()
            run = self._one_run(channel, batch, scenario)
            report.runs.append(run)
            rest = [k for k in batch if k not in run.touched]
            if rest and run.touched:
                pending.append(rest)
            elif rest and run.error and len(rest) > 1:
                if report.baseline is None:  # nothing injected: how the scenario ends on its own
                    report.baseline = self._one_run(channel, [], scenario)
                if _shape(run.error) != _shape(report.baseline.error):
                    pending += [rest[len(rest) // 2:], rest[:len(rest) // 2]]
        if self.store is not None and not any(r.store_saw for r in report.runs):
            # No run reached the store (every one failed before): one with nothing injected must,
            # or the sweep could not tell whether a store request carries credentials at all.
            report.runs.append(self._one_run(channel, [], scenario))
        self.injector.arm(None)
        return report

    def _one_run(self, channel: str, batch: list[str], scenario: Callable[[], Any]) -> Run:
        for attacker in [*self._attackers.values(), *([self.store] if self.store else [])]:
            attacker.clear()
        self.arm(channel, batch)
        started = time.monotonic()
        error, output = None, ""
        try:
            output = str(scenario() or "")
        except Exception as exc:  # noqa: BLE001 - a client's failure is an outcome, recorded
            error = " ".join(f"{type(exc).__name__}: {exc}".split())[:4000]
        run = Run(list(batch), time.monotonic() - started, error)
        said = f"{error or ''}\n{output}"
        storage = channel in STORAGE_CHANNELS
        catalog_secrets = [*self.extra_secrets, *self.injector.catalog_secrets]
        storage_secrets = list(self.injector.storage_secrets)
        user_secrets = self.user_secrets()
        injected = [] if channel == "redirect" else list(self.values(batch).values())
        for name in batch:
            attacker = self._attackers[f"redirect:{name}" if channel == "redirect" else name]
            received = [r for r in attacker.received if r.ours]
            run.foreign += [f"{name}: {r.shown()}" for r in attacker.received if not r.ours]
            redirected = channel == "redirect" and self.injector.redirected[name] > 0
            if received or redirected or re.search(rf"127\.0\.0\.1:{attacker.port}(?!\d)", said):
                run.touched.append(name)
            for r in received:
                what = leaks(r, catalog_secrets, storage_secrets, storage, user_secrets, injected)
                if what:
                    run.leaked.setdefault(name, []).append(f"{r.shown()}: {', '.join(what)}")
        if self.store is not None:
            # The store is the user's (or, vended, the catalog's own): what it gets is not a leak, but
            # the oracle must see it, or it is blind to what a store request carries.
            for r in (r for r in self.store.received if r.ours):
                what = leaks(r, catalog_secrets, storage_secrets, True, user_secrets)
                run.store_saw += [f"{r.shown()}: {', '.join(what)}"] if what else []
        return run


# --------------------------------------------------------------------------- fixtures both sweep files use


@pytest.fixture(scope="module")
def sweep_table(pyiceberg_catalog) -> tuple[str, str]:
    """A small table both modes read and append to: (namespace, name)."""
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    ns = f"sweep_{uuid.uuid4().hex[:8]}"
    pyiceberg_catalog.create_namespace(ns)
    table = pyiceberg_catalog.create_table((ns, "t"), Schema(NestedField(1, "x", LongType(), required=False)))
    table.append(pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    return ns, "t"


@pytest.fixture(scope="module")
def modes(lakehouse, tmp_path_factory) -> Iterator[dict[str, Sweep]]:
    """A started Sweep per storage mode ("vended" and "signing" on S3; "adls-vended", "gcs-own"...:
    `tests.leak_stores.STORE_MODES`), and what its clients connect with (`sweep.connection`). Every
    mode's user also holds the machine's identities (`sweep.ambient.env`: set them in the test)."""
    info = lakehouse.info
    keys = url_keys()
    with contextlib.ExitStack() as stack:
        signer = SigningCatalogProxy(info.iceberg_uri, info.s3_endpoint, info.access_key, info.secret_key).start()
        stack.callback(signer.stop)
        ambient = Ambient(tmp_path_factory.mktemp("ambient")).start()
        stack.callback(ambient.stop)
        pool = stack.enter_context(attackers(keys))
        sweeps: dict[str, Sweep] = {}
        upstreams: dict[str, tuple[Injector, str, str | None]] = {
            "vended": (Injector(info.iceberg_uri), info.credential, None),
            "signing": (Injector(signer.url), f"{CLIENT_ID}:{signer.clients[CLIENT_ID]}", "remote-signing")}
        for store, store_modes in STORE_MODES.items():
            for mode in store_modes:
                upstreams[f"{store}-{mode}"] = (StoreInjector(info.iceberg_uri, store, mode), info.credential, None)
        for mode, (proxy, credential, delegation) in upstreams.items():
            injector = stack.enter_context(proxy)
            if isinstance(injector, StoreInjector):
                user, user_secrets = injector.user_properties, injector.user_secrets
            else:  # a user's own S3 keys beside the catalog's (remote signing drops them)
                user = user_s3_keys()
                user_secrets = list(user.values())
            sweeps[mode] = Sweep(injector, pool, keys, extra_secrets=[credential.split(":", 1)[1], credential, HEADER_VALUE],
                                 connection={"uri": injector.url, "warehouse": info.warehouse, "credential": credential,
                                             "delegation": delegation},
                                 user_properties=user, user_secrets=user_secrets, ambient=ambient)
        yield sweeps


def catalog_props(lakehouse: Any, sweep: Sweep, shim: bool = False) -> dict[str, str]:
    """The catalog's properties as a user's Spark conf would hold them (Iceberg Java names), with a
    custom header whose value is a secret."""
    conn = sweep.connection
    props = catalog_properties("local", lakehouse=lakehouse, shim=shim, **{k: v for k, v in conn.items() if v})
    return {**props, **sweep.user_properties, f"header.{HEADER}": HEADER_VALUE}
