"""Hypothesis over the spellings of a catalog request's target: the lakehouse's catalog proxy routes
no request differently from SeaweedFS (on the real SeaweedFS, judged by what each request did).

Each example takes a catalog call (create, commit, multi-table transaction, load) on a table of
namespace `ns_a`, spells its target another way (any character percent-encoded, in upper or lower
hex; double encoding; letters' case; `//`; `;` params; `.`/`..` segments, plain or encoded;
Unicode look-alikes, raw UTF-8 or encoded; a trailing `/`, a query or a fragment) and sends it:

* with a body that keeps the location rule, once through the proxy and once straight to SeaweedFS
  (its own port, admin token), each with markers of its own (a fresh table name, a property value).
  What each did is read back from SeaweedFS afterwards (which table was created, which one got the
  property, which table a load answered). The proxy may refuse a spelling; when it does not, it
  must have done exactly what SeaweedFS does with that spelling;
* with a body that breaks the rule (a location at or inside table `victim`) through the proxy:
  whatever the spelling, no table ends up there.

How SeaweedFS routes (read in its source, weed/command/s3.go and weed/s3api/iceberg/server.go):
gorilla/mux with SkipClean on the *decoded* path, no dot-segment or `//` cleaning, case-sensitive
literals, `[^/]+` variables, so `%2F` is a separator once decoded; the answers here are measured,
not assumed.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyspark_catalog_ext.lakehouse.server import start_lakehouse
from tests.helpers import REST_ID_SCHEMA
from tests.lakehouse_rest import Rest

NS_A, NS_B = "ns_a", "ns_b"
OPS = ("create", "commit", "transaction", "load")
LOOKALIKES = {"a": "\u0430", "e": "\u0435", "s": "\u017f", "t": "\uff54", "k": "\u212a", "n": "\u0578", "_": "\uff3f"}


@pytest.fixture(scope="module")
def lake():
    with start_lakehouse() as lh:
        proxy = Rest(lh.info)
        raw = Rest(lh.info, uri=f"http://127.0.0.1:{lh.info.ports['iceberg']}")
        for ns in (NS_A, NS_B):
            assert proxy.post("/namespaces", {"namespace": [ns]}).status_code == 200
            for name in ("t", "victim"):
                assert proxy.create(ns, name).status_code == 200
        yield proxy, raw


def _canonical(op: str) -> str:
    if op == "create":
        return f"/v1/warehouse/namespaces/{NS_A}/tables"
    if op == "transaction":
        return "/v1/warehouse/transactions/commit"
    return f"/v1/warehouse/namespaces/{NS_A}/tables/t"


def _pct(ch: str, lower: bool) -> str:
    hexed = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
    return hexed.lower() if lower else hexed


@st.composite
def spellings(draw: Any, target: str) -> bytes:
    """`target` spelled another way by one to three transformations."""
    text = target
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["encode", "double", "case", "slashes", "semicolon", "dots", "unicode", "tail"]))
        i = draw(st.integers(0, len(text) - 1))
        if kind == "encode":  # characters of one segment, or any characters, separators included
            if draw(st.booleans()):
                starts = [0] + [n + 1 for n, c in enumerate(text) if c == "/"]
                start = draw(st.sampled_from(starts))
                end = text.find("/", start) if "/" in text[start:] else len(text)
                chosen = draw(st.sets(st.integers(start, max(start, end - 1)), min_size=1))
            else:
                chosen = draw(st.sets(st.integers(0, len(text) - 1), min_size=1, max_size=6))
            lower = draw(st.booleans())
            text = "".join(_pct(c, lower) if n in chosen and c != "%" else c for n, c in enumerate(text))
        elif kind == "double" and text[i] not in "%":
            text = text[:i] + "%25" + _pct(text[i], False)[1:] + text[i + 1:]
        elif kind == "case":
            text = text[:i] + text[i].swapcase() + text[i + 1:]
        elif kind == "slashes":
            slashes = [n for n, c in enumerate(text) if c == "/"]
            j = draw(st.sampled_from(slashes))
            text = text[:j] + "/" + text[j:]
        elif kind == "semicolon":
            slashes = [n for n, c in enumerate(text) if c == "/"][1:] + [len(text)]
            j = draw(st.sampled_from(slashes))
            text = text[:j] + draw(st.sampled_from([";", ";x=1", "%3B", ";jsessionid=1"])) + text[j:]
        elif kind == "dots":
            slashes = [n for n, c in enumerate(text) if c == "/"]
            j = draw(st.sampled_from(slashes))
            text = text[:j] + draw(st.sampled_from(["/.", "/x/..", "/%2e", "/%2E%2e", "/./.", "/t/../..", "/.%2e"])) + text[j:]
        elif kind == "unicode":
            letters = [n for n, c in enumerate(text) if c in LOOKALIKES]
            if letters:
                j = draw(st.sampled_from(letters))
                ch = LOOKALIKES[text[j]]
                text = text[:j] + (ch if draw(st.booleans()) else _pct(ch, False)) + text[j + 1:]
        else:
            text += draw(st.sampled_from(["/", "?x=1", "#frag", "?warehouse=warehouse", "%3Fx", "%23x", "?", "%00"]))
    return text.encode("utf-8")


def _create_effect(raw: Rest, name: str) -> set[str]:
    """The namespaces in which a table `name` now exists."""
    return {ns for ns in (NS_A, NS_B) if raw.request("GET", f"/namespaces/{ns}/tables/{name}").status_code == 200}


def _marked(raw: Rest, marker: str) -> set[str]:
    """The tables whose property `probe` is `marker`."""
    out = set()
    for ns in (NS_A, NS_B):
        for name in ("t", "victim"):
            props = raw.load(ns, name)["metadata"].get("properties") or {}
            if props.get("probe") == marker:
                out.add(f"{ns}.{name}")
    return out


def _body(op: str, *, name: str = "", marker: str = "", location: str | None = None) -> dict:
    if op == "create":
        return {"name": name, "schema": REST_ID_SCHEMA, **({"location": location} if location else {})}
    update = ({"action": "set-location", "location": location} if location
              else {"action": "set-properties", "updates": {"probe": marker}})
    change = {"requirements": [], "updates": [update]}
    if op == "transaction":
        return {"table-changes": [{"identifier": {"namespace": [NS_A], "name": "t"}, **change}]}
    return change


def _effect(proxy_or_raw: Rest, raw: Rest, op: str, target: bytes) -> Any:
    """Send `target` with a benign body (markers of its own); what it did, read back from SeaweedFS."""
    marker = uuid.uuid4().hex[:10]
    name = "p" + marker
    if op == "load":
        answer = proxy_or_raw.raw("GET", target)
        try:
            return answer.json()["metadata"]["table-uuid"] if answer.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            return None
    proxy_or_raw.raw("POST", target, _body(op, name=name, marker=marker))
    return _create_effect(raw, name) if op == "create" else _marked(raw, marker)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_the_proxy_routes_no_spelling_differently_from_seaweedfs(lake, data):
    proxy, raw = lake
    op = data.draw(st.sampled_from(OPS), label="op")
    target = data.draw(spellings(_canonical(op)), label="target")
    through_proxy = _effect(proxy, raw, op, target)
    if through_proxy:  # the proxy did not refuse it: it must have done what SeaweedFS does with it
        assert through_proxy == _effect(raw, raw, op, target), (op, target)
    if op != "load":  # and a rule-breaking body in this spelling changes nothing, whatever it reaches
        victim = f"s3://warehouse/{NS_A}/victim"
        name = "v" + uuid.uuid4().hex[:10]
        for location in (victim, victim + "/inner"):
            proxy.raw("POST", target, _body(op, name=name, location=location))
            for ns in _create_effect(raw, name):
                assert not raw.location(ns, name).startswith(victim), (op, target, location)
            assert raw.location(NS_A, "t") == f"s3://warehouse/{NS_A}/t", (op, target, location)


def test_the_plain_spellings_do_what_they_say(lake):
    """The control: each call spelled plainly has its effect through the proxy (so a refusal above
    is the proxy's reading of an odd spelling, not a broken call)."""
    proxy, raw = lake
    for op in OPS:
        target = _canonical(op).encode()
        effect = _effect(proxy, raw, op, target)
        assert effect and effect == _effect(raw, raw, op, target), op
