"""Runs in the Spark Connect client venv: a Python UDF, executed by the server as the server's OS
user, reads what a hostile client's UDF could read without special rights: its own and every
ancestor's /proc/<pid>/environ and cmdline, every absolute file path named on those command lines
(a `--properties-file`, `--conf-file=...`), and the files under the working directories of the
server's processes (the UDF's ancestors up to the `connect-server` launcher). The job then looks
for each needle (read from stdin as a JSON list, never passed to the server) in what came back.
Prints one JSON line `RESULT {"sources": [...], "hits": {source: [needle index, ...]}}`.

argv[1]: JSON {"remote": "sc://host:port"}; the client token comes from SPARK_CONNECT_AUTHENTICATE_TOKEN.
"""

from __future__ import annotations

import json
import sys

args = json.loads(sys.argv[1])
needles = json.loads(sys.stdin.read())

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.functions import udf  # noqa: E402


def walk(_: int) -> str:
    """Runs on the server: what this process can read, by source name."""
    import os

    found: dict[str, str] = {}
    max_files, max_bytes = 3000, 4 << 20

    def read(path: str) -> str | None:
        try:
            with open(path, "rb") as f:
                return f.read(max_bytes).decode("latin-1")
        except OSError:
            return None

    def keep(name: str, text: str | None) -> None:
        if text is not None and len(found) < max_files:
            found[name] = text

    cwds = [os.getcwd()]
    pid, server_side = os.getpid(), True
    while pid > 1:
        cmdline = read(f"/proc/{pid}/cmdline") or ""
        keep(f"/proc/{pid}/cmdline", cmdline)
        keep(f"/proc/{pid}/environ", read(f"/proc/{pid}/environ"))
        for arg in cmdline.split("\0"):
            for path in (arg, arg.partition("=")[2]):
                if path.startswith("/") and os.path.isfile(path):
                    keep(path, read(path))
        if server_side:
            try:
                cwds.append(os.readlink(f"/proc/{pid}/cwd"))
            except OSError:
                pass
            server_side = "connect-server" not in cmdline  # beyond the launcher: the test's own processes
        stat = read(f"/proc/{pid}/stat") or ""
        pid = int(stat.rsplit(")", 1)[1].split()[1]) if ")" in stat else 1
    for top in dict.fromkeys(cwds):
        for root, _dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    keep(path, read(path))
    keep("cwds", "\n".join(cwds))
    return json.dumps(found)


spark = SparkSession.builder.remote(args["remote"]).getOrCreate()
found = json.loads(spark.range(1).select(udf(walk, "string")("id")).collect()[0][0])
hits = {source: [i for i, needle in enumerate(needles) if needle in text] for source, text in found.items()}
print("RESULT " + json.dumps({"sources": sorted(found), "cwds": found.get("cwds", "").split("\n"),
                              "hits": {s: h for s, h in hits.items() if h}}), flush=True)
spark.stop()
