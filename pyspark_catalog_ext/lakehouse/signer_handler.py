"""The remote signer's HTTP side (signer.py's `SigningCatalogProxy.handler`): each request goes to
the sign endpoint, the DeleteObjects relay or the OAuth2 token endpoint, or is forwarded to the
catalog as the admin, a table answer coming back rewritten for remote signing."""

from __future__ import annotations

import json
import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from pyspark_catalog_ext.lakehouse.canonical import CATALOG_ROUTES, SIGNER_ROUTES, Refusal, Route, parse_target
from pyspark_catalog_ext.lakehouse.catalog_proxy import forwarded_headers
from pyspark_catalog_ext.lakehouse.proxy import HOP_BY_HOP, MAX_CATALOG_BODY, MAX_TOKEN_BODY, UPSTREAM_TIMEOUT, ProxyHandler, error_body
from pyspark_catalog_ext.lakehouse.s3_allow_list import MAX_DELETE_BODY
from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID

if TYPE_CHECKING:
    from pyspark_catalog_ext.lakehouse.signer import SigningCatalogProxy

__all__ = ["DELETE_PATH", "SignerHandler"]

log = logging.getLogger("pyspark_catalog_ext.lakehouse.signer")

DELEGATION_HEADER = "X-Iceberg-Access-Delegation"
MAX_SIGN_BODY = 2 << 20  # a sign request is small JSON, or a DeleteObjects body (<= MAX_DELETE_BODY) in JSON
DELETE_PATH = "v1/aws/s3/delete"  # the DeleteObjects relay: /v1/aws/s3/delete/<ticket>
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _s3_error(code: str, message: str) -> bytes:
    """An S3-style XML error body (what the AWS SDK parses)."""
    error = ET.Element("Error")
    ET.SubElement(error, "Code").text = code
    ET.SubElement(error, "Message").text = message
    return ET.tostring(error, encoding="utf-8", xml_declaration=True)


def _is_table_answer(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("metadata"), dict) and "metadata-location" in body


class SignerHandler(ProxyHandler):
    proxy: SigningCatalogProxy

    def _dispatch(self) -> None:
        proxy = self.proxy
        route = parse_target(self.command, self.raw_target(), proxy.guard.warehouse, CATALOG_ROUTES + SIGNER_ROUTES)
        if isinstance(route, Refusal):
            self.close_connection = True  # the body (if any) is not read: the stream cannot be framed
            return self._reply(route.status, route.body(), {"Content-Type": "application/json"})
        limit = {"sign": MAX_SIGN_BODY, "delete-relay": MAX_DELETE_BODY, "token": MAX_TOKEN_BODY}.get(route.name, MAX_CATALOG_BODY)
        try:
            body = self._body(limit)
        except ValueError as exc:
            self.close_connection = True  # the rest of the stream is not a request we can frame
            status, reason = exc.args
            return self._error(status, "BadRequestException", reason)
        if route.name == "sign":
            return self._sign(route.id, body)
        if route.name == "delete-relay":
            return self._relay(route.id, body)
        if route.name == "token":
            return self._token(body)
        found = proxy.token_grant(self.headers.get("Authorization"))
        if found is None and route.name != "config":
            return self._error(401, "NotAuthorizedException", "a bearer token from this catalog's /v1/oauth/tokens is required")
        client, expires = found or (CLIENT_ID, None)
        return self._forward(route, body, client, expires)

    def _relay(self, ticket: str, body: bytes) -> None:
        """The DeleteObjects relay (see SigningCatalogProxy.sign); errors in S3's XML, for the SDK."""
        try:
            why = self.proxy.relay_delete(ticket, body)
        except Exception as exc:  # noqa: BLE001 - S3 unreachable: a 502 the SDK retries
            return self._reply(502, _s3_error("ServiceUnavailable", f"S3 unreachable: {type(exc).__name__}"), {"Content-Type": "application/xml"})
        if isinstance(why, str):
            log.info("refused a DeleteObjects relay: %s", why)
            return self._reply(403, _s3_error("AccessDenied", why), {"Content-Type": "application/xml"})
        status, content, content_type = why
        self._reply(status, content, {"Content-Type": content_type})

    def _token(self, raw: bytes) -> None:
        answer = self.proxy.issue_token(parse_qs(raw.decode("utf-8", "replace")), self.headers.get("Authorization"))
        if answer is None:
            return self._json(401, {"error": "invalid_client", "error_description": "unknown client id/secret or token"})
        self._json(200, answer, {"Cache-Control": "no-store"})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _dispatch

    def _sign(self, scope: str, raw: bytes) -> None:
        proxy = self.proxy
        found = proxy.token_grant(self.headers.get("Authorization"))
        if found is None:
            return self._error(401, "NotAuthorizedException", "a catalog bearer token is required to sign")
        client, token_expires = found
        try:
            request = json.loads(raw)
            method, url, headers = request["method"].upper(), request["uri"], request.get("headers") or {}
            if not (isinstance(url, str) and isinstance(headers, dict) and isinstance(request.get("region") or "", str)
                    and all(isinstance(v, str) or isinstance(v, list) and all(isinstance(x, str) for x in v) for v in headers.values())):
                raise TypeError
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return self._error(400, "BadRequestException", "the body must be an S3SignRequest: {region, method, uri, headers}")
        why = proxy.check_request(scope, method, url, headers, request.get("body"), client=client, token_expires=token_expires)
        if why is not None:
            with proxy._lock:
                proxy.refused += 1
            why = _CONTROL.sub("?", why)  # keys and header names come from the client: keep the reason one line
            method = _CONTROL.sub("?", method[:20])
            log.info("refused to sign %s %r: %s", method, url[:300], why)
            return self._error(403, "ForbiddenException", f"not signing {method}: {why}")
        answer = proxy.sign(request, client)
        with proxy._lock:
            proxy.signed += 1
        # private: the client may reuse this signature for its own later requests of the same method and
        # object (Iceberg Java for 30 s, this package's FileIOs until the signature's validity minus a
        # margin). It grants nothing the signature does not already grant for its 15 minutes, and every
        # sign request that does arrive is checked above. A DeleteObjects relay ticket is single-use.
        delete = answer["uri"].startswith(f"{proxy.url}/{DELETE_PATH}/")
        self._json(200, answer, {"Cache-Control": "no-store" if delete else "private"})

    def _forward(self, route: Route, raw: bytes, client: str, expires: float | None) -> None:
        proxy = self.proxy
        status, content, out = proxy.guard.handle(route, raw, self._send)
        if 200 <= status < 300 and content:
            try:
                body = json.loads(content)
            except ValueError:
                body = None
            if _is_table_answer(body):
                try:
                    table = proxy.table_for_answer(route, raw)
                except Exception as exc:  # noqa: BLE001 - cannot read the stored metadata: no endpoint rather than a guessed one
                    log.info("no signer scope for %s: %s", route.name, type(exc).__name__)
                    table = None
                content = json.dumps(proxy.rewrite_table_answer(body, "", client, expires=expires, table=table)).encode()
        self._reply(status, content, out)

    def _send(self, target: str, payload: bytes | None) -> tuple[int, bytes, Mapping[str, str]]:
        """Forward this catalog call to SeaweedFS as the admin; (status, body, headers)."""
        import requests

        proxy = self.proxy
        headers = forwarded_headers(self.headers, drop=("authorization", DELEGATION_HEADER.lower()))
        headers["Accept-Encoding"] = "identity"
        json_type = {"Content-Type": "application/json"}
        try:
            headers["Authorization"] = proxy.upstream_authorization()
        except Exception as exc:  # noqa: BLE001 - any failure to log in upstream is a 502 here
            return 502, error_body(502, "ServiceUnavailableException", f"the signer could not log in to the catalog: {type(exc).__name__}"), json_type
        try:
            resp = proxy.guard.session().request(self.command, proxy.catalog_uri + target, headers=headers, data=payload,
                                                  timeout=UPSTREAM_TIMEOUT, allow_redirects=False)
        except requests.RequestException as exc:
            return 502, error_body(502, "ServiceUnavailableException", f"catalog unreachable: {type(exc).__name__}"), json_type
        return resp.status_code, resp.content, {k: v for k, v in resp.headers.items() if k.lower() not in HOP_BY_HOP}
