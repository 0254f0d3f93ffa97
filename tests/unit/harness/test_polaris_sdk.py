"""The reference Polaris server (tests/servers/policy_server.py) checks every policy and
notification request and answer against Polaris's own generated models (the `apache-polaris`
SDK); the maintenance and notification tests run our real traffic through it. Here: the check
itself bites, on a request and on an answer."""

from __future__ import annotations

import requests

from tests.servers.base import Response
from tests.servers.policy_server import PolicyServer

BEARER = {"Authorization": "Bearer t"}


class _AcceptsAnyNotification(PolicyServer):
    """Its own notification handling accepts anything: only the SDK check can refuse."""

    def _notify(self, m, body):
        return Response(204, [])


class _WrongAnswer(PolicyServer):
    """Answers applicable-policies with a version as a string (the spec says integer)."""

    def _applicable(self, req, prefix):
        policy = {"policy-type": "system.data-compaction", "inheritable": True, "name": "p", "version": "2",
                  "inherited": False, "namespace": ["db"]}
        return Response(200, [("Content-Type", "application/json")]).with_json({"applicable-policies": [policy]})


def test_a_request_that_drifts_from_polaris_models_is_refused(lakehouse):
    with _AcceptsAnyNotification(lakehouse.info.iceberg_uri) as server:
        url = f"{server.url}/v1/wh/namespaces/db/tables/t/notifications"
        good = {"notification-type": "UPDATE", "payload": {"table-name": "t", "timestamp": 1, "table-uuid": "u",
                                                           "metadata-location": "s3://b/db/t/metadata/1.json"}}
        assert requests.post(url, json=good, headers=BEARER, timeout=10).status_code == 204
        bad = {**good, "payload": {**good["payload"], "timestamp": "soon"}}
        resp = requests.post(url, json=bad, headers=BEARER, timeout=10)
        assert resp.status_code == 400
        assert "not a valid Polaris NotificationRequest: timestamp: Input should be a valid integer" in resp.json()["error"]["message"]
        assert server.sdk_mismatches and "timestamp" in server.sdk_mismatches[0]


def test_an_answer_of_the_reference_server_that_drifts_is_an_error(lakehouse):
    with _WrongAnswer(lakehouse.info.iceberg_uri) as server:
        resp = requests.get(f"{server.url}/polaris/v1/wh/applicable-policies", params={"namespace": "db"},
                            headers=BEARER, timeout=10)
        assert resp.status_code == 500
        assert "not a valid Polaris GetApplicablePoliciesResponse" in resp.json()["error"]["message"]
        assert "version" in resp.json()["error"]["message"]
