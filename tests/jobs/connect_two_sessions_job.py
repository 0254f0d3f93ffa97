"""Runs in the Spark Connect client venv: two client sessions on one Connect server (one driver
JVM). Session A writes and reads a table; session B reads the status and then defines catalogs at
run time (`spark.conf.set`, as SQL `SET spark.sql.catalog.*` does) whose FileIO properties name A's
table: by its identity with a made-up handle, and with A's own handle. Prints one JSON line
`RESULT {...}`.

argv[1]: JSON {"remote": "sc://host:port", "namespace": "db", "table": "t", "catalog_props": {key: value}}
(`catalog_props`: the properties of B's catalogs, before the table handle and identity).
"""

from __future__ import annotations

import json
import sys

args = json.loads(sys.argv[1])

from pyspark.sql import SparkSession  # noqa: E402

STATUS = "SELECT catalog_ext_status()"
ns, name = args["namespace"], args["table"]
table = f"lake.{ns}.{name}"

a = SparkSession.builder.remote(args["remote"]).create()
b = SparkSession.builder.remote(args["remote"]).create()
a.sql(f"CREATE NAMESPACE IF NOT EXISTS lake.{ns}")
a.sql(f"CREATE TABLE {table} USING iceberg AS SELECT id, id * 3 AS v FROM range(0, 100, 1, 2)")
a_sum = a.sql(f"SELECT sum(v) FROM {table}").collect()[0][0]
status_a = a.sql(STATUS).collect()[0][0]
status_b = b.sql(STATUS).collect()[0][0]

rows = [t for t in json.loads(status_a)["tables"] if t["catalog"] == "lake" and t["namespace"] == [ns] and t["table"] == name]
handle, location = rows[0]["handle"], rows[0]["location"]
identity = json.dumps({"catalog": "lake", "namespace": [ns], "table": name, "location": location})
attacks = {
    # The table's identity (not secret: catalog, name, location) and a handle made up for it.
    "identity": {"catalog-ext.table-handle": "made-up", "catalog-ext.table": identity},
    # A's own handle (as if B had learned it), under the catalog session the handle names.
    "handle": {"catalog-ext.table-handle": handle, "catalog-ext.table": identity,
               "catalog-ext.catalog-session": handle.split(".")[0]},
}
outcomes = {}
for attack, extra in attacks.items():
    catalog = f"other_{attack}"
    for key, value in {**args["catalog_props"], **extra}.items():
        b.conf.set(f"spark.sql.catalog.{catalog}.{key}", value)
    b.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
    try:
        outcomes[attack] = {"sum": b.sql(f"SELECT sum(v) FROM {catalog}.{ns}.{name}").collect()[0][0]}
    except Exception as exc:  # noqa: BLE001 - the refusal is the expected outcome; the test reads it
        outcomes[attack] = {"error": str(exc)[:3000]}

result = {
    "a_sum": a_sum,
    "handle": handle,
    "status_a": json.loads(status_a),
    "status_b": json.loads(status_b),
    "status_b_raw": status_b,
    "status_b_after": json.loads(b.sql(STATUS).collect()[0][0]),
    "a_sum_after": a.sql(f"SELECT sum(v) FROM {table}").collect()[0][0],
    "attacks": outcomes,
}
print("RESULT " + json.dumps(result), flush=True)
b.stop()
a.stop()
