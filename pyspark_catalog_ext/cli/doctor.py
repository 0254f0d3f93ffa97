"""`pyspark-catalog-ext doctor`: argument parsing and output routing.

Table mode prints the probe table to stdout as probes finish. `--json` prints the JSON report to
stdout and the table to stderr. `--print-profiles` / `--print-matrix` need no server and do not
import Spark or PyIceberg (the run itself is imported only when probes run).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pyspark_catalog_ext.cli.options import add_connection_arguments, connection_kwargs

__all__ = ["register"]

_EPILOG = """exit status: 0 every probe the profile requires passed; 1 one of them failed or is unsupported
(or cleanup failed); 2 the catalog cannot be used at all (one-line error); 130 Ctrl-C (after cleanup).
examples:
  pyspark-catalog-ext doctor --profile local
  pyspark-catalog-ext doctor --profile polaris --uri https://polaris.example.com/api/catalog \\
      --warehouse prod --credential "$CLIENT_ID:$CLIENT_SECRET" --json > report.json
  pyspark-catalog-ext doctor --print-matrix"""


def _cmd(args: argparse.Namespace) -> int:
    if args.print_profiles:
        from pyspark_catalog_ext.doctor.profile_listing import profiles_json, render_profiles

        print(json.dumps(profiles_json(), indent=2) if args.json else render_profiles())
        return 0
    if args.print_matrix:
        from pyspark_catalog_ext.doctor.matrix_tables import render_matrix

        print(render_matrix(args.matrix_dir))
        return 0
    if args.list_probes:
        from pyspark_catalog_ext.doctor.suite import PROBES

        for spec in PROBES:
            print(f"{spec.id:<24} {spec.group:<12} {spec.title}")
        return 0

    from pyspark_catalog_ext.doctor.report import TextProgress, dumps, summary_lines
    from pyspark_catalog_ext.doctor.runner import run_doctor

    out = sys.stderr if args.json else sys.stdout
    progress = TextProgress(out)
    report = run_doctor(
        args.profile, skip=args.skip or (), require=args.require or (), shim=not args.no_shim,
        server_label=args.server_label, progress=progress, open_catalog=args.open_catalog, **connection_kwargs(args),
    )
    progress.interrupted()
    for line in summary_lines(report):
        print(line, file=out)
    if args.json:
        print(dumps(report))
    if args.save_matrix is not None and not report.interrupted:
        from pyspark_catalog_ext.doctor.matrix import save_matrix

        path = save_matrix(json.loads(dumps(report, include_http=False)), args.save_matrix or None)
        print(f"matrix entry written to {path}", file=out)
    if report.interrupted:
        print(interrupted_line(report), file=sys.stderr)
    return report.exit_code


def interrupted_line(report: Any) -> str:
    """The last word after Ctrl-C/SIGTERM: "cleanup done" only when every cleanup action succeeded (the
    summary above has said "cleanup FAILED: ..." otherwise)."""
    if report.cleanup_ok:
        return f"error: interrupted ({report.interrupted}); cleanup done"
    return f"error: interrupted ({report.interrupted}); cleanup incomplete: see 'cleanup FAILED' above"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `doctor` to the CLI."""
    p = subparsers.add_parser(
        "doctor", help="probe an Iceberg REST catalog (vended credentials, scope, refresh, staging, idempotency)",
        description="Conformance probes for an Iceberg REST catalog; each ends pass, fail or unsupported with evidence.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_connection_arguments(p)
    p.add_argument("--json", action="store_true", help="print the JSON report on stdout (the table goes to stderr)")
    p.add_argument("--skip", action="append", metavar="PROBE|GROUP",
                   help="do not run these probes (comma separated, repeatable; groups: basics, vended, scope, "
                        "refresh, staging, idempotency, signing, pyiceberg, spark, clients)")
    p.add_argument("--require", action="append", metavar="PROBE|GROUP",
                   help="also require these probes to pass (besides the profile's)")
    p.add_argument("--open-catalog", action="store_true",
                   help="the catalog enforces no auth on purpose (a test server): the auth probe warns instead of "
                        "failing and the probes after it run (undeclared, an open catalog fails the auth probe)")
    p.add_argument("--no-shim", action="store_true", help="run the Spark probes with plain Iceberg (no refresh shim)")
    p.add_argument("--server-label", metavar="TEXT", help="what the catalog is, for the report and matrix (e.g. 'Polaris 1.2')")
    p.add_argument("--save-matrix", nargs="?", const="", metavar="DIR",
                   help="store the report as this profile's support-matrix entry (default: the package's resources/matrix)")
    p.add_argument("--print-profiles", action="store_true", help="list the vendor profiles (no server needed)")
    p.add_argument("--print-matrix", action="store_true", help="print the support matrix as markdown (no server needed)")
    p.add_argument("--matrix-dir", metavar="DIR", help="read matrix entries from DIR (with --print-matrix)")
    p.add_argument("--list-probes", action="store_true", help="list the probes and their groups")
    p.set_defaults(func=_cmd)
