"""Runs in a venv with `pyspark-client` (Spark Connect, no Py4J) and this package: a CTAS through a
Connect server, then attach() and its status read through SQL. Prints one JSON line `RESULT {...}`.

argv[1]: JSON {"remote": "sc://host:port", "table": "lake.db.t", "ctas": SQL}.
"""

from __future__ import annotations

import json
import sys

args = json.loads(sys.argv[1])

from pyspark.sql import SparkSession  # noqa: E402

import pyspark_catalog_ext as pce  # noqa: E402
from pyspark_catalog_ext.errors import ConfigError  # noqa: E402

spark = SparkSession.builder.remote(args["remote"]).getOrCreate()
spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
spark.sql(args["ctas"])
count = spark.sql(f"SELECT count(*) FROM {args['table']}").collect()[0][0]

manager = pce.attach(spark)
mine = [s for s in manager.status() if s.name == args["table"]]
refusals = {}
for name, call in {"policy": lambda: pce.attach(spark, policy=pce.RefreshPolicy()),
                   "sources": lambda: pce.attach(spark, sources={"lake": object()}),
                   "refresh_now": lambda: manager.refresh_now()}.items():
    try:
        call()
        refusals[name] = None
    except ConfigError as exc:
        refusals[name] = str(exc)
result = {
    "count": count,
    "manager": type(manager).__name__,
    "catalogs": sorted(manager.refresh_needs()),
    "status": [{"name": s.name, "strategy": s.strategy, "refresh_count": s.refresh_count, "failure_count": s.failure_count,
                "refreshes_by_strategy": s.refreshes_by_strategy, "expires_at": s.expires_at.isoformat() if s.expires_at else None}
               for s in mine],
    "commits": [{"kind": c.kind, "table": c.table, "outcome": c.outcome} for c in manager.commits() if c.table == args["table"]],
    "plugin": manager.plugin_stats(),
    "refusals": refusals,
    "py4j_imported": any(m == "py4j" or m.startswith("py4j.") for m in sys.modules),
}
print("RESULT " + json.dumps(result), flush=True)
spark.stop()
