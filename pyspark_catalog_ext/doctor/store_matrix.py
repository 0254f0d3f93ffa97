"""The store table: which stores (S3, ADLS, GCS) are tested, on which emulator and Spark x Iceberg
stacks (and why), and what the doctor's store probes answer per refresh style, from the store
recordings (`resources/matrix/stores/<store>.json`, written by tests/slow/test_store_doctor.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyspark_catalog_ext.doctor.matrix import FAILS, MATRIX_DIR, RECORD_ENV, WORKS, capabilities, md_cell, stable_text

__all__ = ["STORES_DIR", "STORE_PROBES", "STORE_STYLES", "STORE_STACKS", "load_stores", "store_record", "render_store_table"]

#: Recordings of the doctor's ADLS and GCS probes on the emulated stores (tests/slow/test_store_doctor.py), one file per store.
STORES_DIR = MATRIX_DIR / "stores"
#: The store probes a store recording keeps, and the catalog switches each recording ran with.
STORE_PROBES = ("store-credentials", "store-access", "store-refresh")
STORE_STYLES: Mapping[str, str] = {"tokens": "storage-refresh-token", "endpoint": "refresh endpoint", "neither": "neither"}

#: Which Spark x Iceberg stacks each store runs on, and why (docs/stores.md, section 3): `ci` is run by
#: the suite, `checked` was run once by hand, `not_run` was not run. S3's are every stack of jvm-stacks.json.
STORE_STACKS: Mapping[str, Mapping[str, str]] = {
    "adls": {"ci": "Spark 4.1 × 1.11.0 (the shim's refresh, tests/slow/test_stores.py); Spark 3.5 × 1.10.2 (a staged CTAS)",
             "checked": "Spark 3.5 × 1.10.2, 1.11.0, 1.12.0; Spark 4.1 × 1.11.0, 1.12.0 (plain Iceberg: a round trip and a staged CTAS)",
             "not_run": "Spark 4.0 × 1.11.0 (no 4.0 venv made here; the same runtime classes and bundle)",
             "why": "Maven Central serves `iceberg-azure-bundle` at 1.10.0 only, so every Iceberg takes it; ADLSFileIO takes "
                    "the shim's client function from 1.11.0 on; 1.10 has no such hook: there a renewed SAS reaches files opened "
                    "after the renewal (a new ADLSFileIO per SAS), nothing is resent on a 403"},
    "gcs": {"ci": "Spark 4.1 × 1.11.0 (the shim's refresh, tests/slow/test_stores.py)",
            "checked": "Spark 3.5 × 1.10.2, 1.11.0, 1.12.0; Spark 4.1 × 1.11.0, 1.12.0 (plain Iceberg: a round trip and a staged CTAS)",
            "not_run": "Spark 4.0 × 1.11.0 (no 4.0 venv made here; the same runtime classes and bundle)",
            "why": "Maven Central serves `iceberg-gcp-bundle` at 1.10.0 and 1.11.0: {bundles}"},
}


def _resource(name: str) -> dict[str, Any]:
    return json.loads((MATRIX_DIR.parent / name).read_text())


def _s3_stacks() -> str:
    lines = _resource("jvm-stacks.json")["spark"]
    return "; ".join(f"Spark {line} × {', '.join(spec['iceberg'])}" for line, spec in lines.items())


def _bundles(store: str) -> str:
    by_release = _resource("store-jars.json")["stores"][store]["bundle"]
    return ", ".join(f"{release} takes {coord.rsplit(':', 1)[1]}" for release, coord in by_release.items())


def load_stores(directory: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """Store recordings by store ("adls", "gcs"); invalid files are ignored."""
    out: dict[str, dict[str, Any]] = {}
    folder = Path(directory) if directory else STORES_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("store") == path.stem:
            out[path.stem] = data
    return out


def store_record(report: Mapping[str, Any]) -> dict[str, Any]:
    """What a store recording keeps of one doctor run: the store probes' capabilities, and the
    `store-refresh` probe's own one-line answer (the strategies; the other answers hold what changes
    from run to run: an Azurite SAS made in the same second as the last is the same token)."""
    caps = capabilities(report)
    by_id = {p["id"]: p for p in report.get("probes", [])}
    out = {pid: dict(caps[pid]) for pid in STORE_PROBES if pid in caps}
    if "store-refresh" in out:
        out["store-refresh"]["doctor"] = stable_text(by_id["store-refresh"].get("summary", ""))
    return out


def _store_refresh_cell(section: Mapping[str, Any] | None, store: str) -> str:
    if not section:
        return "not recorded"
    cap = section.get("store-refresh") or {}
    text = str(cap.get("doctor") or "").removeprefix(f"{store}: ")
    access = (section.get("store-access") or {}).get("outcome")
    shown = f"**{cap.get('outcome')}**" if cap.get("outcome") == FAILS else str(cap.get("outcome"))
    return md_cell(f"{shown}: {text}" + ("" if access == WORKS else f"; the token: {access}"))


def render_store_table(directory: Path | str | None = None) -> str:
    """Which stores are tested, on which emulator and Spark x Iceberg stacks (and why), and what the
    doctor's store probes answer on the test catalog per refresh style."""
    stores = load_stores(directory)
    head = ["Store", "Emulator", "Catalog", "Spark × Iceberg in the suite", "Run once by hand", "Not run", "Why these stacks"]
    head += [f"doctor `store-refresh`, catalog with {title}" for title in STORE_STYLES.values()]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines.append("| " + " | ".join(["S3", "SeaweedFS (`weed mini`, the embedded lakehouse)", "every catalog of the support matrix",
                                    _s3_stacks() + " (tests/slow/test_stack_matrix.py)", "—", "—",
                                    "the whole supported matrix (`resources/jvm-stacks.json`)"]
                                   + ["the S3 probes (the support matrix)"] * len(STORE_STYLES)) + " |")
    for store, facts in STORE_STACKS.items():
        entry = stores.get(store) or {}
        catalog = (f"{entry.get('catalog')} {entry.get('release')} + a vending front (tests/stores)" if entry else "not recorded")
        cells = [store.upper(), str(entry.get("emulator") or "not recorded"), catalog, facts["ci"], facts["checked"],
                 facts["not_run"], facts["why"].format(bundles=_bundles(store))]
        lines.append("| " + " | ".join(md_cell(c) for c in cells)
                     + " | " + " | ".join(_store_refresh_cell(entry.get(f"doctor-{style}"), store) for style in STORE_STYLES) + " |")
    lines.append("")
    lines.append("Stores: rendered from `resources/matrix/stores/*.json`, which tests/slow/test_store_doctor.py records "
                 f"(`{RECORD_ENV}=1`) and compares on every run, and from the stacks run (docs/stores.md, section 3). "
                 "Each `store-refresh` cell lists the strategies the Spark shim tries, in its order, for a committed and a staged "
                 "table (PyIceberg jobs renew with their own strategies, proven with FsspecFileIO); Iceberg alone has only the endpoint, and a staged "
                 "table's endpoint answers 404.")
    return "\n".join(lines)
