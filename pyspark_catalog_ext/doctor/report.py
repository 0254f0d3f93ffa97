"""Doctor output: the progress table printed while probes run, the closing summary, and the
JSON report (validated by `resources/doctor-report.schema.json`). Every line goes through the
run's SecretBag before it is printed."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import IO, Any

from pyspark_catalog_ext.doctor.registry import ProbeSpec
from pyspark_catalog_ext.doctor.result import FAIL, PASS, SKIPPED, UNSUPPORTED, ProbeResult
from pyspark_catalog_ext.doctor.runner import DoctorReport

__all__ = ["SCHEMA_PATH", "REPORT_FORMAT", "report_dict", "dumps", "TextProgress", "summary_lines", "load_schema"]

#: JSON Schema of the `--json` report (and of the saved matrix files).
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "resources" / "doctor-report.schema.json"
#: Bumped when the report's shape changes incompatibly.
REPORT_FORMAT = 1
_ID_WIDTH = 23


def load_schema() -> dict[str, Any]:
    """The shipped JSON Schema of the report."""
    return json.loads(SCHEMA_PATH.read_text())


def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in ("pyspark", "pyiceberg", "boto3"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = None
    return out


def report_dict(report: DoctorReport, include_http: bool = True) -> dict[str, Any]:
    """The JSON form of a report. No secrets: the catalog URI has no userinfo, evidence holds key
    names, fingerprints and statuses only (and the text is scrubbed again by `dumps`)."""
    counts = report.counts
    return {
        "format": REPORT_FORMAT,
        "tool": {"name": "pyspark-catalog-ext", "version": report.tool_version},
        "generated_at": report.started_iso,
        "duration_s": report.duration_s,
        "profile": report.profile.name,
        "tested_here": True,
        "catalog": {
            "uri": report.catalog_uri,
            "warehouse": report.warehouse,
            "prefix": report.prefix,
            "auth": report.auth,
            "server": report.server_label,
            "embedded_lakehouse": report.embedded_lakehouse,
        },
        "environment": _versions(),
        "shim": report.shim,
        "namespace": report.namespace,
        "required": list(report.required),
        "probes": [r.as_dict(include_http) for r in report.results],
        "summary": {
            **counts,
            "required_failed": [r.id for r in report.required_failures],
            "ok": report.exit_code == 0,
            "exit_code": report.exit_code,
        },
        "cleanup": {"ok": report.cleanup_ok, "actions": report.cleanup},
        "interrupted": report.interrupted,
    }


def dumps(report: DoctorReport, include_http: bool = True) -> str:
    """The JSON report as text, scrubbed of every secret the run has seen."""
    return report.secrets.scrub(json.dumps(report_dict(report, include_http), indent=2, sort_keys=False))


def _fmt_ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _row(result: ProbeResult) -> str:
    mark = "*" if result.required else " "
    return f"{mark} {result.id:<{_ID_WIDTH}} {result.status:<11} {_fmt_ms(result.elapsed_ms):>8}  {result.summary}"


class TextProgress:
    """Prints the probe table as probes finish (with a `running...` line on a terminal)."""

    def __init__(self, stream: IO[str] = sys.stdout) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.report: DoctorReport | None = None
        self._pending = False

    def _scrub(self, text: str) -> str:
        return self.report.secrets.scrub(text) if self.report else text

    def _write(self, text: str) -> None:
        self.stream.write(self._scrub(text))
        self.stream.flush()

    def note(self, text: str) -> None:
        self._write(f"{text}\n")

    def begin(self, report: DoctorReport) -> None:
        self.report = report
        warehouse = f" (warehouse {report.warehouse!r})" if report.warehouse else ""
        server = f" [{report.server_label}]" if report.server_label else ""
        self._write(
            f"pyspark-catalog-ext doctor {report.tool_version} - profile {report.profile.name} - "
            f"{report.catalog_uri}{warehouse}{server}\n"
            f"working namespace {report.namespace} (removed at the end); * = required by the profile\n\n"
            f"  {'PROBE':<{_ID_WIDTH}} {'RESULT':<11} {'TIME':>8}  EVIDENCE\n"
        )

    def start(self, spec: ProbeSpec, required: bool) -> None:
        if self.tty:
            self._write(f"{'*' if required else ' '} {spec.id:<{_ID_WIDTH}} running...")
            self._pending = True

    def finish(self, result: ProbeResult) -> None:
        prefix = "\r\033[K" if self._pending else ""
        self._pending = False
        self._write(prefix + _row(result) + "\n")

    def interrupted(self) -> None:
        if self._pending:
            self._write("\n")
            self._pending = False


def summary_lines(report: DoctorReport) -> list[str]:
    """The closing lines under the table."""
    c = report.counts
    lines = [f"\n{c[PASS]} pass, {c[FAIL]} fail, {c[UNSUPPORTED]} unsupported, {c[SKIPPED]} skipped "
             f"in {report.duration_s:.1f} s"]
    required = [r for r in report.results if r.required and r.id not in report.skipped_by_user]
    failures = report.required_failures
    if report.interrupted:
        lines.append(f"interrupted ({report.interrupted}) after {len(report.results)} probe(s)")
    elif failures:
        lines.append(f"required by profile {report.profile.name!r}: "
                     + ", ".join(f"{r.id} {r.status}" for r in failures)
                     + f" ({len(required) - len(failures)} of {len(required)} pass)")
    else:
        lines.append(f"required by profile {report.profile.name!r}: all {len(required)} pass")
    if any(r.evidence.get("open_catalog") == "declared" for r in report.results):
        lines.append("warning: the catalog enforces no auth (declared with --open-catalog)")
    bad = [f"{c['action']}: {c.get('note')}" for c in report.cleanup if not c.get("ok")]
    sweep = [str(c.get("note")) for c in report.cleanup if c.get("ok") and c["action"].startswith("drop namespace")]
    others = sum(1 for c in report.cleanup if c.get("ok") and not c["action"].startswith("drop namespace"))
    if bad:
        lines.append("cleanup FAILED: " + "; ".join(bad))
    elif report.cleanup:
        lines.append("cleanup: " + "; ".join(sweep + ([f"{others} other action(s) done"] if others else [])))
    else:
        lines.append("cleanup: nothing was created")
    return [report.secrets.scrub(line) for line in lines]
