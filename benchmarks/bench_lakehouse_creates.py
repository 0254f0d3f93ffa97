"""Benchmark: what the embedded lakehouse's catalog proxy costs a create table, with 1 namespace and
with 300 more, against the same create sent straight to SeaweedFS; and the lakehouse's start-up.

Creates alternate between the proxy and SeaweedFS's own port in one run, so the ratios hold on a
busy machine; medians of `creates` each. Nothing but the public API and HTTP:

    python benchmarks/bench_lakehouse_creates.py [creates] [starts] [--delegation remote-signing]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import requests

from pyspark_catalog_ext.lakehouse.server import Lakehouse, start_lakehouse

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def _token(uri: str, client_id: str, secret: str) -> str:
    resp = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={"grant_type": "client_credentials", "client_id": client_id,
                                                                      "client_secret": secret, "scope": "catalog"})
    resp.raise_for_status()
    return resp.json()["access_token"]


def _creates(uris: dict[str, tuple[str, str]], ns: str, count: int) -> dict[str, float]:
    """Median seconds of a create on each of `uris` (name -> (base, token)), alternating."""
    times: dict[str, list[float]] = {name: [] for name in uris}
    for _ in range(count):
        for name, (base, token) in uris.items():
            started = time.perf_counter()
            resp = requests.post(f"{base}/v1/warehouse/namespaces/{ns}/tables", timeout=120, headers={"Authorization": f"Bearer {token}"},
                                 json={"name": "t" + uuid.uuid4().hex[:10], "schema": SCHEMA})
            times[name].append(time.perf_counter() - started)
            resp.raise_for_status()
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("creates", nargs="?", type=int, default=20)
    parser.add_argument("starts", nargs="?", type=int, default=5)
    parser.add_argument("--delegation", default="vended-credentials")
    args = parser.parse_args()
    with start_lakehouse(delegation=args.delegation) as lake:
        info = lake.info
        raw = f"http://127.0.0.1:{info.ports['iceberg']}"
        client_id, secret = info.credential.split(":", 1)
        uris = {"proxy": (info.iceberg_uri, _token(info.iceberg_uri, client_id, secret)),
                "seaweedfs": (raw, _token(raw, info.access_key, info.secret_key))}
        raw_headers = {"Authorization": f"Bearer {uris['seaweedfs'][1]}"}
        ns = "bench" + uuid.uuid4().hex[:6]
        requests.post(f"{raw}/v1/warehouse/namespaces", json={"namespace": [ns]}, headers=raw_headers, timeout=30).raise_for_status()
        few = _creates(uris, ns, args.creates)
        for _ in range(300):
            requests.post(f"{raw}/v1/warehouse/namespaces", json={"namespace": ["other" + uuid.uuid4().hex[:8]]},
                          headers=raw_headers, timeout=30).raise_for_status()
        many = _creates(uris, ns, args.creates)
    print(f"create table ({args.delegation}), median of {args.creates}:")
    for label, result in (("1 namespace", few), ("301 namespaces", many)):
        print(f"  {label:15} proxy {result['proxy'] * 1000:7.1f} ms  SeaweedFS {result['seaweedfs'] * 1000:6.1f} ms  "
              f"ratio {result['proxy'] / result['seaweedfs']:.2f}")
    print(f"  proxy with 301 namespaces / with 1: {many['proxy'] / few['proxy']:.2f}")
    starts = []
    for _ in range(args.starts):
        started = time.perf_counter()
        lake = Lakehouse(delegation=args.delegation).start()
        starts.append(time.perf_counter() - started)
        lake.stop()
    print(f"lakehouse start-up, median of {args.starts}: {statistics.median(starts):.2f} s "
          f"(min {min(starts):.2f}, max {max(starts):.2f})")


if __name__ == "__main__":
    main()
