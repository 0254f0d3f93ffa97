"""Real object stores to test against, started like the lakehouse: on loopback, on free ports, as
child processes that die with their parent, installed into the user cache on first use.

- ``Azurite``: Azure Blob Storage (``azurite.py``), accounts with random keys, SAS minting.
- ``FakeGcs``: Google Cloud Storage (``gcs.py``): fake-gcs-server behind ``GcsFront``, a loopback
  front that accepts only the bearer tokens it minted and answers 401 once one has expired.
- ``StoreCatalog``: Iceberg's REST fixture on those stores behind ``VendingCatalog``, a front that
  vends short-lived SAS and OAuth tokens (``catalog.py``).

`python -m tests.stores adls|gcs` starts one store and its catalog and prints how to connect.
What the emulators can and cannot show is in docs/stores.md.
"""
