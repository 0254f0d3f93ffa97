"""The shared timelines of the credential-refresh engine (`resources/refresh-scenarios.json`):
schedule, hard margin, single flight, backoff, same-keys answers, reactive waves, learned lifetime,
"refreshing cannot help", clock skew and the strategy plan, on a fake clock. Both runtimes replay
every row (tests/unit/refresh/test_refresh_scenarios.py here, the shim's RefreshScenariosTest.java), and
docs/refresh.md shows them as rendered by `markdown_table()`."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pyspark_catalog_ext import markdown

__all__ = ["SCENARIOS_PATH", "scenarios", "markdown_table"]

SCENARIOS_PATH = Path(__file__).resolve().parent.parent / "resources" / "refresh-scenarios.json"


@lru_cache(maxsize=1)
def scenarios() -> dict[str, Any]:
    return json.loads(SCENARIOS_PATH.read_text())


def _step(step: dict[str, Any]) -> str:
    text = f"{step['at'] / 1000:g} s {step['do']}"
    if step.get("times", 1) > 1:
        text += f" ×{step['times']}"
    if "keys" in step:
        text += f" ({step['keys']})"
    if "requests" in step:
        text += f" → {step['requests']}"
    if "error" in step:
        text += f" → **{step['error']}**"
    return text


def _ms(value: int | None) -> str:
    return "none" if value is None else f"{value / 1000:g} s"


def markdown_table() -> str:
    """The timelines and the plans as the Markdown tables docs/refresh.md shows (checked by a unit test)."""
    spec = scenarios()
    timelines = []
    for r in spec["timelines"]:
        setup = [f"keys {_ms(r['keys-lifetime-ms'])}"]
        setup += [f"{k} {v}" for k, v in r.get("policy", {}).items()]
        if "catalog-skew-ms" in r:
            setup.append(f"catalog clock {r['catalog-skew-ms'] / 1000:+g} s")
        answers = ", ".join(a["answer"] + (f" {_ms(a['lifetime-ms'])}" if a["answer"] == "new" else "")
                            for a in r.get("catalog", [])) or "new"
        expect = r["expect"]
        events = "; ".join(e["type"].split(".")[1] + "(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in e.items()
                                                                     if k != "type") + ")"
                           for e in expect.get("events", [])) or "—"
        timelines.append([r["id"], ", ".join(setup), answers, "; ".join(_step(s) for s in r["steps"]),
                          str(expect["requests"]), _ms(expect.get("learned-lifetime-ms")), events, r["why"]])
    yes = {True: "yes", False: "no"}
    plans = []
    for p in spec["plans"]:
        s = p["state"]
        missing = ", ".join(p.get("missing", [])) or "—"
        if "after-ms" in p:
            missing += f" ({p['after-ms'] / 1000:g} s ago)"
        plans.append([p["id"], yes[s["staged"]], yes[s["stage-request"]] if s["staged"] else "—",
                      yes[s["refresh-endpoint"]], yes[s["refresh-token"]], missing, ", ".join(p["plan"]) or "none",
                      p["label"]])
    return (markdown.table(["id", "keys, policy", "catalog answers", "steps (→ catalog requests so far)", "requests",
                            "learned", "events", "why"], timelines) + "\n"
            + markdown.table(["id", "staged", "stage-create request", "refresh endpoint", "storage-refresh-token",
                              "missing endpoints", "plan, in order", "label"], plans))


if __name__ == "__main__":  # python -m pyspark_catalog_ext.refresh.scenarios: the tables for docs/refresh.md
    print(markdown_table(), end="")
