"""The vendor profiles listed for `doctor --print-profiles`: readable, or as plain data (`--json`)."""

from __future__ import annotations

from typing import Any

from pyspark_catalog_ext.catalog.profiles import PROFILES, Profile

__all__ = ["render_profiles", "profiles_json"]


def profiles_json() -> list[dict[str, Any]]:
    """Profiles as plain data (for `--print-profiles --json`)."""
    out = []
    for prof in PROFILES.values():
        out.append({
            "name": prof.name, "description": prof.description, "uri": prof.uri_template, "auth": prof.auth,
            "signing_name": prof.signing_name, "region": prof.region, "delegation": prof.delegation,
            "warehouse": prof.warehouse_hint, "required_probes": list(prof.required_probes),
            "alias_of": prof.alias_of, "tested_here": prof.tested_here, "emulated": prof.emulated, "notes": prof.notes,
        })
    return out


def _auth_text(prof: Profile) -> str:
    if prof.auth == "sigv4":
        return f"SigV4 ({prof.signing_name or 'execute-api'})"
    return {"oauth2": "OAuth2", "token": "bearer token", "none": "none"}.get(prof.auth, prof.auth)


def render_profiles() -> str:
    """A readable listing of the vendor profiles and the probes each requires."""
    rows = [("PROFILE", "AUTH", "URI", "STATUS")]
    for prof in PROFILES.values():
        status = "tested here" if prof.tested_here else "emulated here" if prof.emulated else "reference only"
        if prof.alias_of:
            status += f" (alias of {prof.alias_of})"
        rows.append((prof.name, _auth_text(prof), prof.uri_template or "(the running lakehouse)", status))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.append("")
    for prof in PROFILES.values():
        lines.append(f"{prof.name}: {prof.description}")
        lines.append(f"  warehouse: {prof.warehouse_hint}")
        lines.append(f"  required probes: {', '.join(prof.required_probes)}")
        if prof.notes:
            lines.append(f"  notes: {prof.notes}")
    return "\n".join(lines)
