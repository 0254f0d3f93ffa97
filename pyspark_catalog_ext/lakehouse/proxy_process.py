"""The lakehouse's proxy as a process of its own (`local up`: it must outlive the command, as weed
does): the remote signer, or the location guard alone. Everything it needs comes as one JSON line
on stdin, keys included, so nothing of it shows in `ps`; it ends when the lakehouse's weed does."""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

from pyspark_catalog_ext.lakehouse.catalog_proxy import CatalogGuardProxy
from pyspark_catalog_ext.lakehouse.filer import FilerAccess
from pyspark_catalog_ext.lakehouse.guard import LocationGuard
from pyspark_catalog_ext.lakehouse.proxy import MAX_TOKEN_BODY
from pyspark_catalog_ext.lakehouse.signer import SigningCatalogProxy
from pyspark_catalog_ext.lakehouse.tokens import CLIENT_ID
from pyspark_catalog_ext.processes import alive

__all__ = ["FIELDS", "main"]

#: The JSON line's fields: where the catalog and S3 are, the port to serve, the weed process to
#: outlive not, the mode ("remote-signing" or "guard"), the keys, and the filer's URL and write key
#: (the guard's rollbacks, filer.py).
FIELDS = ("catalog_uri", "s3_endpoint", "port", "watch_pid", "mode", "access_key", "secret_key", "client_secret", "filer_url",
          "filer_key")


def main() -> int:
    try:
        settings = json.loads(sys.stdin.readline(MAX_TOKEN_BODY))
        missing = [f for f in FIELDS if f not in settings]
        if missing or settings["mode"] not in ("remote-signing", "guard"):
            raise ValueError(missing)
    except (ValueError, TypeError):
        print(f"error: stdin must carry one JSON line with {', '.join(FIELDS)} (mode: remote-signing or guard)",
              file=sys.stderr)
        return 2
    server: Any
    filer = FilerAccess(settings["filer_url"], settings["filer_key"])
    if settings["mode"] == "guard":
        server = CatalogGuardProxy(LocationGuard(settings["catalog_uri"], settings["s3_endpoint"], settings["access_key"],
                                                 settings["secret_key"], filer=filer, index_at_start=True), port=int(settings["port"]),
                                   clients={CLIENT_ID: settings["client_secret"], settings["access_key"]: settings["secret_key"]})
    else:
        server = SigningCatalogProxy(settings["catalog_uri"], settings["s3_endpoint"], settings["access_key"],
                                     settings["secret_key"], port=int(settings["port"]),
                                     clients={CLIENT_ID: settings["client_secret"]}, filer=filer, index_at_start=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    try:
        while not stop.wait(1.0):
            if not alive(int(settings["watch_pid"])):
                break
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
