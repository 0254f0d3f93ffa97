"""Run gcp-storage-emulator in memory, answering requests on several threads: ``python gcs_emulator.py HOST PORT``.

Run by path (it imports only the emulator and the standard library). The emulator serves one request
at a time (``http.server.HTTPServer``), so a client that leaves a download half read stalls every
other request: Arrow's GcsFileSystem opens a whole-object download with each input file and reads
ranges beside it. Here it serves on a thread per connection (``ThreadingHTTPServer``); a lock keeps
the emulator's store (plain dicts, its whole index re-serialised on each write) to one request at a
time, taken after the request body is read and let go before the answer is written, so a slow reader
holds up no one.

It also cancels a resumable upload, which the emulator does not do: ``DELETE`` on a session URI
answers 499 as GCS does, and the session is gone (gcsfs's ``GCSFile.discard`` and the FileIO's
failed GCS write send it; unserved, the emulator's 501 is retried by gcsfs for over a minute).
"""
from __future__ import annotations

import http.server
import logging
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


def main(host: str, port: int) -> None:
    for route, methods in emulator.HANDLERS:
        if route.startswith("^/upload/storage/v1/b/"):
            methods["DELETE"] = _cancel_upload
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
