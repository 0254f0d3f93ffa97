"""Run gcp-storage-emulator in memory, answering requests on several threads: ``python gcs_emulator.py HOST PORT``.

Run by path (it imports only the emulator and the standard library). The emulator serves one request
at a time (``http.server.HTTPServer``), so a client that leaves a download half read stalls every
other request: Arrow's GcsFileSystem opens a whole-object download with each input file and reads
ranges beside it. Here it serves on a thread per connection (``ThreadingHTTPServer``); a lock keeps
the emulator's store (plain dicts, its whole index re-serialised on each write) to one request at a
time, taken after the request body is read and let go before the answer is written, so a slow reader
holds up no one.

Two answers of GCS the emulator lacks are added:
- ``DELETE`` on a resumable session URI cancels the upload: 499, and the session is gone (gcsfs's
  ``GCSFile.discard`` and the FileIO's failed GCS write send it; the emulator's 501 is retried by
  gcsfs for over a minute).
- A download whose range starts at or past the end of a non-empty object: 416 (the emulator answers
  206 with nothing), which google-cloud-cpp takes as a permanent error (docs/stores.md section 5).
- An object uploaded without a content type gets ``application/octet-stream``, as on GCS (the
  emulator stores null, on which google-cloud-cpp's JSON parser aborts the whole process).
"""
from __future__ import annotations

import http.server
import json
import logging
import re
import sys
import threading
from functools import wraps
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any

from gcp_storage_emulator import server as emulator

_STORE = threading.Lock()


def _locked(handler: Any) -> Any:
    @wraps(handler)
    def run(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        request.data  # noqa: B018 - the body is read (and kept) before the lock is taken
        with _STORE:
            return handler(request, response, storage, *args, **kwargs)
    return run


_CANCELLED = SimpleNamespace(value=499, phrase="Client Closed Request")  # GCS's answer to a cancel


def _cancel_upload(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> None:
    upload_id = (request.query.get("upload_id") or [""])[0]
    if upload_id not in storage.resumable:
        response.status = HTTPStatus.NOT_FOUND
        return
    storage.delete_resumable_file_obj(upload_id)
    storage._delete_file("_resumable", storage.safe_id(upload_id))  # the chunks it took
    storage._write_config_to_file()
    response.status = _CANCELLED


_RANGE_FROM = re.compile(r"^\s*bytes=(\d+)-\d*$")
_UNSATISFIABLE = json.dumps({"error": {"code": 416, "message": "The requested range cannot be satisfied.", "errors": [
    {"domain": "global", "reason": "requestedRangeNotSatisfiable", "message": "The requested range cannot be satisfied."}]}})


def _ranged(download: Any) -> Any:
    @wraps(download)
    def run(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        match = _RANGE_FROM.match(request.get_header("range") or "")
        if match:
            try:
                size = int(storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])["size"])
            except emulator.objects.NotFound:
                size = 0
            if 0 < size <= int(match[1]):
                response.status = HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE
                response["Content-Type"] = "application/json; charset=UTF-8"
                response._content = _UNSATISFIABLE
                return None
        return download(request, response, storage, *args, **kwargs)
    return run


def _typed(make: Any) -> Any:
    @wraps(make)
    def run(base_url: Any, bucket: Any, name: Any, content_type: Any, *args: Any, **kwargs: Any) -> Any:
        return make(base_url, bucket, name, content_type or "application/octet-stream", *args, **kwargs)
    return run


def main(host: str, port: int) -> None:
    emulator.objects._make_object_resource = _typed(emulator.objects._make_object_resource)
    download = emulator.objects.download
    emulator.objects.download = _ranged(download)  # what objects.get (?alt=media) calls
    for route, methods in emulator.HANDLERS:
        if route.startswith("^/upload/storage/v1/b/"):
            methods["DELETE"] = _cancel_upload
        for method, handler in methods.items():
            if handler is download:
                methods[method] = emulator.objects.download
    for _, methods in emulator.HANDLERS:
        for method, handler in methods.items():
            methods[method] = _locked(handler)
    emulator.objects.insert = _locked(emulator.objects.insert)  # the router's fallback for uploads
    http.server.HTTPServer = http.server.ThreadingHTTPServer  # type: ignore[misc] # what the emulator builds
    logging.basicConfig(level=logging.ERROR)  # its warnings: one per batch part written
    server = emulator.create_server(host, port, in_memory=True)
    server.run()  # until SIGTERM


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
