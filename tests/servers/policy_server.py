"""Reference Polaris policy API in front of a catalog that has none (SeaweedFS).

Implements the parts of apache/polaris ``spec/polaris-catalog-apis/policy-apis.yaml`` that the
maintenance runner uses; everything else is forwarded to the upstream catalog unchanged.

* ``POST /polaris/v1/{prefix}/namespaces/{ns}/policies`` (CreatePolicyRequest: name, type,
  description, content) -> 200 ``{"policy": Policy}``, version 0; 409 if the name exists in that
  namespace; 400 for a bad name (``^[A-Za-z0-9\\-_]+$``) or content that fails the predefined
  type's schema (2025-02-03: ``enable`` required, no unknown top-level keys: "Invalid policy", no
  more said); 404 if the namespace does not exist upstream.
* ``GET .../namespaces/{ns}/policies[?policyType=]`` -> 200 ``{"identifiers": [...], "next-page-token": null}``.
* ``GET|PUT .../policies/{name}`` load / update (UpdatePolicyRequest: description, content,
  current-policy-version; a successful update increments ``version``; a stale
  current-policy-version is 409).
* ``PUT .../policies/{name}/mappings`` (AttachPolicyRequest ``{"target": {"type":
  "catalog|namespace|table-like", "path": [...]}, "parameters": {...}}``) -> 204; re-attaching
  the same policy replaces the parameters; an inheritable type already attached to the target
  by another policy is 409; a missing policy or target is 404.
  ``POST .../mappings`` (DetachPolicyRequest) -> 204 or 404.
* ``GET /polaris/v1/{prefix}/applicable-policies?namespace=<levels joined by 0x1F>&target-name=
  &policyType=&page-token=&page-size=`` -> ``{"applicable-policies": [ApplicablePolicy],
  "next-page-token": null}``. Inheritable policies come from the catalog, each enclosing
  namespace and the target itself, the nearest one per type winning (table over namespace over
  catalog; a nearer one goes to the end of the list); ``inherited`` is true unless attached to the
  target itself; non-inheritable ones apply only where attached. ``namespace`` is the namespace the
  policy is defined in. A missing target is 404 (the upstream catalog is asked, with the caller's
  own Authorization).

As a real Polaris 1.4.1 answers (tests/emulators/observed/polaris-1.4.1.json; its source at 1.7.0
and main the same): ``page-token``/``page-size`` are ignored (every result, ``next-page-token``
null), a Policy carries ``"description": null`` when it has none, and errors use its words
("Policy already exists PolicyIdentifier[namespace=ns, name=p]", "Table or view does not exist: ns.t"
when attaching to a missing table, "Invalid policy").

* ``POST /v1/{prefix}/namespaces/{ns}/tables/{t}/notifications`` (Polaris
  ``notifications-api.yaml``, NotificationRequest: ``notification-type`` VALIDATE, CREATE,
  UPDATE, DROP; payload ``table-name``, ``timestamp``, ``table-uuid``, ``metadata-location``
  required, ``metadata``) -> 204. A timestamp older than or equal to the newest one admitted
  for the table is 409; VALIDATE is a dry run (location within ``allowed_locations``, else 400;
  no timestamp admitted); CREATE of a mirrored table is 409; DROP of an unknown one is 404.
  The mirror is in memory: ``mirrored`` (table -> last payload) and ``notifications`` (all).

Inheritable types: the predefined ``system.*`` maintenance types. Evidence: ``requests_by_route``,
``policies``, ``mappings``.
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, unquote, urlsplit

from .base import BufferedProxy, Request, Response

NS_SEP = "\x1f"
INHERITABLE = {"system.data-compaction", "system.metadata-compaction", "system.snapshot-expiry",
               "system.orphan-file-removal"}
_NAME = re.compile(r"^[A-Za-z0-9\-_]+$")
_POLICIES = re.compile(r"^/polaris/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/policies$")
_POLICY = re.compile(r"^/polaris/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/policies/(?P<name>[^/]+)$")
_MAPPINGS = re.compile(r"^/polaris/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/policies/(?P<name>[^/]+)/mappings$")
_APPLICABLE = re.compile(r"^/polaris/v1/(?P<prefix>[^/]+)/applicable-policies$")
_NOTIFY = re.compile(r"^/v1/(?P<prefix>[^/]+)/namespaces/(?P<ns>[^/]+)/tables/(?P<t>[^/]+)/notifications$")
NOTIFICATION_TYPES = {"VALIDATE", "CREATE", "UPDATE", "DROP"}
_TOP_KEYS = {"version", "enable", "config"}
_ORPHAN_KEYS = _TOP_KEYS | {"max_orphan_file_age_in_days", "locations"}


@dataclass
class StoredPolicy:
    namespace: list[str]
    name: str
    type: str
    content: str | None
    description: str | None = None
    version: int = 0

    def as_policy(self) -> dict:
        out = {"policy-type": self.type, "inheritable": self.type in INHERITABLE, "name": self.name,
               "version": self.version, "description": self.description}
        if self.content is not None:
            out["content"] = self.content
        return out

    def identifier(self) -> str:
        """How Polaris names a policy in its messages."""
        return f"PolicyIdentifier[namespace={'.'.join(self.namespace)}, name={self.name}]"


@dataclass
class Mapping:
    policy: tuple[tuple[str, ...], str]  # (policy namespace, policy name)
    target_type: str
    path: tuple[str, ...]
    parameters: dict = field(default_factory=dict)


def _error(status: int, type_: str, message: str) -> Response:
    return Response.iceberg_error(status, type_, message)


def _validate_content(type_: str, content: str | None) -> str | None:
    """Why `content` fails the predefined type's 2025-02-03 schema, or None."""
    if type_ not in INHERITABLE:
        return None
    try:
        data = json.loads(content or "")
    except ValueError:
        return "content is not valid JSON"
    if not isinstance(data, dict):
        return "content must be a JSON object"
    if not isinstance(data.get("enable"), bool):
        return "required boolean property 'enable' is missing"
    allowed = _ORPHAN_KEYS if type_ == "system.orphan-file-removal" else _TOP_KEYS
    extra = sorted(set(data) - allowed)
    if extra:
        return f"unknown properties {extra}"
    if "version" in data and data["version"] != "2025-02-03":
        return "version must be 2025-02-03"
    config = data.get("config", {})
    if not isinstance(config, dict) or any(not isinstance(v, (str, int, float, bool)) for v in config.values()):
        return "config must map strings to string, number or boolean values"
    return None


def _sdk_models() -> dict:
    """(route kind, method) -> (request model, answer model) from the official Polaris SDK."""
    from apache_polaris.sdk.catalog.models.attach_policy_request import AttachPolicyRequest
    from apache_polaris.sdk.catalog.models.create_policy_request import CreatePolicyRequest
    from apache_polaris.sdk.catalog.models.detach_policy_request import DetachPolicyRequest
    from apache_polaris.sdk.catalog.models.get_applicable_policies_response import GetApplicablePoliciesResponse
    from apache_polaris.sdk.catalog.models.list_policies_response import ListPoliciesResponse
    from apache_polaris.sdk.catalog.models.load_policy_response import LoadPolicyResponse
    from apache_polaris.sdk.catalog.models.notification_request import NotificationRequest
    from apache_polaris.sdk.catalog.models.update_policy_request import UpdatePolicyRequest

    return {("policies", "POST"): (CreatePolicyRequest, LoadPolicyResponse),
            ("policies", "GET"): (None, ListPoliciesResponse),
            ("policy", "GET"): (None, LoadPolicyResponse),
            ("policy", "PUT"): (UpdatePolicyRequest, LoadPolicyResponse),
            ("mappings", "PUT"): (AttachPolicyRequest, None),
            ("mappings", "POST"): (DetachPolicyRequest, None),
            ("applicable-policies", "GET"): (None, GetApplicablePoliciesResponse),
            ("notifications", "POST"): (NotificationRequest, None)}


_SDK_MODELS = _sdk_models()


def _sdk_mismatch(model, body: bytes) -> str | None:
    """None if `body` parses as `model` (the SDK's own from_json), else the first problem, one line."""
    from pydantic import ValidationError

    try:
        model.from_json(body.decode("utf-8"))
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    except (ValueError, TypeError) as exc:
        return str(exc).splitlines()[0][:200]
    return None


class PolicyServer(BufferedProxy):
    def __init__(self, upstream: str, port: int = 0):
        super().__init__(upstream, port)
        self._lock = threading.Lock()
        self.policies: dict[tuple[tuple[str, ...], str], StoredPolicy] = {}
        self.mappings: list[Mapping] = []
        self.requests_by_route: dict[str, int] = {}
        self.allowed_locations: tuple[str, ...] = ("s3://",)
        self.mirrored: dict[str, dict] = {}
        self.notifications: list[dict] = []  # every request: type, table, timestamp, status
        self._admitted_ts: dict[str, int] = {}
        self.sdk_mismatches: list[str] = []  # bodies the apache-polaris models rejected

    def classify(self, req: Request):
        for kind, pattern in (("notifications", _NOTIFY), ("applicable-policies", _APPLICABLE), ("mappings", _MAPPINGS),
                              ("policy", _POLICY), ("policies", _POLICIES)):
            if pattern.match(req.route):
                return kind, None
        return "other", None

    # ---- upstream checks, with the caller's credentials
    def _exists(self, req: Request, prefix: str, path: tuple[str, ...], table: str | None) -> Response | None:
        """None if the namespace (or table) exists upstream, else the error response to return."""
        ns = quote(NS_SEP.join(path), safe="")
        route = f"/v1/{prefix}/namespaces/{ns}" + (f"/tables/{quote(table, safe='')}" if table else "")
        headers = [(k, v) for k, v in req.headers if k.lower() in ("authorization", "host")]
        resp = self.forward(Request("GET", route, headers + [("Accept", "application/json")]))
        if resp.status in (200, 204):
            return None
        if resp.status == 404:
            if table:
                return _error(404, "NoSuchTableException", f"Table does not exist: {'.'.join(path + (table,))}")
            return _error(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(path)}")
        return Response(resp.status, resp.headers, resp.body, resp.reason)

    # ---- processing
    def process(self, req: Request) -> Response:
        """Every request body and every JSON answer of the policy and notification routes is checked
        against Polaris's own generated models (the `apache-polaris` SDK), so neither our client
        nor this reference server can drift from Polaris's published API unnoticed."""
        kind, _ = self.classify(req)
        request_model, response_model = _SDK_MODELS.get((kind, req.method), (None, None))
        if request_model is not None and req.body:
            problem = _sdk_mismatch(request_model, req.body)
            if problem:
                self.sdk_mismatches.append(f"request {req.method} {kind}: {problem}")
                return _error(400, "BadRequestException", f"not a valid Polaris {request_model.__name__}: {problem}")
        resp = self._process(req, kind)
        if response_model is not None and resp.status == 200 and resp.body:
            problem = _sdk_mismatch(response_model, resp.body)
            if problem:  # the reference server is wrong: say so loudly
                self.sdk_mismatches.append(f"answer {req.method} {kind}: {problem}")
                return _error(500, "ReferenceServerError", f"answer is not a valid Polaris {response_model.__name__}: {problem}")
        return resp

    def _process(self, req: Request, kind: str) -> Response:
        with self._lock:
            self.requests_by_route[kind] = self.requests_by_route.get(kind, 0) + 1
        if kind == "other":
            return self.forward(req)
        if not (req.header("Authorization") or "").startswith("Bearer "):
            return _error(401, "NotAuthorizedException", "missing bearer token")
        try:
            body = req.json() if req.body else {}
        except ValueError:
            return _error(400, "BadRequestException", "request body is not JSON")
        if kind == "notifications" and req.method == "POST":
            return self._notify(_NOTIFY.match(req.route), body or {})
        if kind == "applicable-policies" and req.method == "GET":
            return self._applicable(req, _APPLICABLE.match(req.route)["prefix"])
        m = (_MAPPINGS if kind == "mappings" else _POLICY if kind == "policy" else _POLICIES).match(req.route)
        prefix, ns = m["prefix"], tuple(unquote(m["ns"]).split(NS_SEP))
        name = unquote(m["name"]) if "name" in m.groupdict() else None
        if kind == "policies" and req.method == "POST":
            return self._create(req, prefix, ns, body or {})
        if kind == "policies" and req.method == "GET":
            return self._list(req, prefix, ns)
        if kind == "policy" and req.method == "GET":
            with self._lock:
                policy = self.policies.get((ns, name))
            return self._loaded(policy) if policy else self._no_policy(ns, name)
        if kind == "policy" and req.method == "PUT":
            return self._update(ns, name, body or {})
        if kind == "mappings" and req.method in ("PUT", "POST"):
            return self._map(req, prefix, ns, name, body or {}, attach=req.method == "PUT")
        return _error(405, "MethodNotAllowedException", f"{req.method} not allowed on {req.route}")

    @staticmethod
    def _loaded(policy: StoredPolicy) -> Response:
        return Response(200, [("Content-Type", "application/json")]).with_json({"policy": policy.as_policy()})

    @staticmethod
    def _no_policy(ns, name) -> Response:
        return _error(404, "NoSuchPolicyException", f"Policy does not exist: {StoredPolicy(list(ns), name, '', None).identifier()}")

    def _list(self, req: Request, prefix: str, ns: tuple) -> Response:
        """The policies defined in `ns` (of `policyType`), all of them: page-size is not read."""
        missing = self._exists(req, prefix, ns, None)
        if missing:
            return missing
        type_filter = parse_qs(urlsplit(req.path).query).get("policyType", [None])[0]
        with self._lock:
            found = [{"namespace": list(p.namespace), "name": p.name} for (pns, _), p in self.policies.items()
                     if pns == ns and (type_filter is None or p.type == type_filter)]
        return Response(200, [("Content-Type", "application/json")]).with_json({"identifiers": found, "next-page-token": None})

    def _create(self, req: Request, prefix: str, ns: tuple, body: dict) -> Response:
        name, type_ = body.get("name"), body.get("type")
        if not isinstance(name, str) or not _NAME.match(name) or not isinstance(type_, str) or not type_:
            return _error(400, "BadRequestException", "name (^[A-Za-z0-9\\-_]+$) and type are required")
        if _validate_content(type_, body.get("content")):
            return _error(400, "InvalidPolicyException", "Invalid policy")
        missing = self._exists(req, prefix, ns, None)
        if missing:
            return missing
        with self._lock:
            if (ns, name) in self.policies:
                return _error(409, "AlreadyExistsException",
                              f"Policy already exists {self.policies[(ns, name)].identifier()}")
            policy = self.policies[(ns, name)] = StoredPolicy(list(ns), name, type_, body.get("content"),
                                                             body.get("description"))
        return self._loaded(policy)

    def _update(self, ns: tuple, name: str, body: dict) -> Response:
        with self._lock:
            policy = self.policies.get((ns, name))
            if policy is None:
                return self._no_policy(ns, name)
            expected = body.get("current-policy-version")
            if expected is not None and expected != policy.version:
                return _error(409, "PolicyVersionMismatchException",
                              f"policy version is {policy.version}, not {expected}")
            if "content" in body:
                if _validate_content(policy.type, body["content"]):
                    return _error(400, "InvalidPolicyException", "Invalid policy")
                policy.content = body["content"]
            if "description" in body:
                policy.description = body["description"]
            policy.version += 1
        return self._loaded(policy)

    def _map(self, req: Request, prefix: str, ns: tuple, name: str, body: dict, attach: bool) -> Response:
        target = body.get("target")
        if not isinstance(target, dict) or target.get("type") not in ("catalog", "namespace", "table-like"):
            return _error(400, "BadRequestException", "target.type must be catalog, namespace or table-like")
        path = tuple(target.get("path") or ())
        if (target["type"] == "catalog") != (not path) or (target["type"] == "table-like" and len(path) < 2):
            return _error(400, "BadRequestException", f"invalid path {list(path)} for target type {target['type']}")
        with self._lock:
            policy = self.policies.get((ns, name))
        if policy is None:
            return self._no_policy(ns, name)
        if attach and target["type"] != "catalog":
            table = path[-1] if target["type"] == "table-like" else None
            missing = self._exists(req, prefix, path[:-1] if table else path, table)
            if missing and table:
                return _error(404, "NoSuchTableException", f"Table or view does not exist: {'.'.join(path)}")
            if missing:
                return missing
        with self._lock:
            same = [m for m in self.mappings if m.target_type == target["type"] and m.path == path]
            mine = [m for m in same if m.policy == (ns, name)]
            if not attach:
                if not mine:
                    return _error(404, "NoSuchMappingException", "the given mapping between policy and target does not exist")
                self.mappings.remove(mine[0])
                return Response(204)
            if mine:
                mine[0].parameters = dict(body.get("parameters") or {})
                return Response(204)
            if policy.type in INHERITABLE and any(self.policies[m.policy].type == policy.type for m in same):
                return _error(409, "PolicyAttachmentConflictException",
                              f"a {policy.type} policy is already attached to the target")
            self.mappings.append(Mapping((ns, name), target["type"], path, dict(body.get("parameters") or {})))
        return Response(204)

    def _applicable(self, req: Request, prefix: str) -> Response:
        query = parse_qs(urlsplit(req.path).query, keep_blank_values=True)
        ns_param = query.get("namespace", [None])[0]
        target_name = query.get("target-name", [None])[0]
        type_filter = query.get("policyType", [None])[0] or None
        if target_name and not ns_param:
            return _error(400, "BadRequestException", "target-name requires namespace")
        ns = tuple(ns_param.split(NS_SEP)) if ns_param else ()
        if ns:
            missing = self._exists(req, prefix, ns, target_name)
            if missing:
                return missing
        # the target's hierarchy, outermost first: catalog, each namespace level, the table
        chain = [("catalog", ())] + [("namespace", ns[:i]) for i in range(1, len(ns) + 1)]
        if target_name:
            chain.append(("table-like", ns + (target_name,)))
        own = chain[-1]
        found: dict[str, dict] = {}
        direct: list[dict] = []
        with self._lock:
            for level in chain:
                for m in self.mappings:
                    if (m.target_type, m.path) != level:
                        continue
                    policy = self.policies[m.policy]
                    if type_filter and policy.type != type_filter:
                        continue
                    entry = {**policy.as_policy(), "inherited": level != own, "namespace": policy.namespace}
                    if policy.type in INHERITABLE:
                        found.pop(policy.type, None)  # a nearer level overrides, and goes last
                        found[policy.type] = entry
                    elif level == own:
                        direct.append(entry)
        answer = {"applicable-policies": list(found.values()) + direct, "next-page-token": None}
        return Response(200, [("Content-Type", "application/json")]).with_json(answer)

    def _notify(self, m, body: dict) -> Response:
        table = ".".join(unquote(m["ns"]).split(NS_SEP) + [unquote(m["t"])])
        kind, payload = body.get("notification-type"), body.get("payload")
        record = {"type": kind, "table": table, "timestamp": None, "status": 400}
        with self._lock:
            self.notifications.append(record)
            if kind not in NOTIFICATION_TYPES or not isinstance(payload, dict):
                return _error(400, "BadRequestException", "notification-type and payload are required")
            missing = [k for k in ("table-name", "timestamp", "table-uuid", "metadata-location") if k not in payload]
            if missing or not isinstance(payload["timestamp"], int):
                return _error(400, "BadRequestException", f"payload lacks {missing or ['an integer timestamp']}")
            record["timestamp"] = ts = payload["timestamp"]
            if not str(payload["metadata-location"]).startswith(self.allowed_locations):
                return _error(400, "BadRequestException", "metadata-location is outside the allowed locations")
            if ts <= self._admitted_ts.get(table, -1):
                record["status"] = 409
                return _error(409, "AlreadyExistsException",
                              "A notification with a newer timestamp has been admitted for table")
            if kind == "VALIDATE":
                record["status"] = 204
                return Response(204)
            if kind == "CREATE" and table in self.mirrored:
                record["status"] = 409
                return _error(409, "AlreadyExistsException", f"table {table} already exists")
            if kind == "DROP" and table not in self.mirrored:
                record["status"] = 404
                return _error(404, "NoSuchTableException", f"table {table} does not exist")
            self._admitted_ts[table] = ts
            if kind == "DROP":
                del self.mirrored[table]
            else:
                self.mirrored[table] = payload
            record["status"] = 204
        return Response(204)
