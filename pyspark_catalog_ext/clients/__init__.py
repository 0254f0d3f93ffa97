"""Other engines on the same catalogs as the Spark and PyIceberg jobs: DuckDB (`duckdb.py`) and
Trino (`trino.py`), configured from the same connection model (`CatalogConnection`) with the same
trust rules: only the URLs the user gave (or the profile derives from them), secrets masked
unless asked for."""
