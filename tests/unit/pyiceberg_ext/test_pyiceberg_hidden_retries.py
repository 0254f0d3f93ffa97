"""No hidden re-send and no redirect under PyIceberg's guarded commit, on the real lakehouse.

client (GuardedRestCatalog) -> CatalogProxy (faults) -> SeaweedFS. An HTTP client's own machinery
must never act behind the guard: urllib3's Retry re-sending a POST answered 503/429 with
Retry-After, or requests following a 307 (re-sends the commit) or a 303 (turns it into a GET whose
200 looks like the commit's answer). After every case each file the table references still
exists in S3, and the user sees success or our CommitStateUnknownError, never a raw exception.
"""

from __future__ import annotations

import logging
import uuid as uuidlib

import pyarrow as pa
import pytest

from pyspark_catalog_ext.errors import CommitFailedError, CommitStateUnknownError
from pyspark_catalog_ext.pyiceberg_ext.factory import pyiceberg_catalog
from tests.helpers import ID_SCHEMA, id_rows
from tests.servers import CatalogProxy
from tests.unit.pyiceberg_ext.test_pyiceberg_commits import FAST_RETRY

RETRY_AFTER = [("Retry-After", "1")]
NS = "hid"


@pytest.fixture(scope="module")
def plain(lakehouse):
    with CatalogProxy(lakehouse.info.iceberg_uri) as proxy:
        cat = pyiceberg_catalog(lakehouse, uri=proxy.url, **FAST_RETRY)
        cat.create_namespace_if_not_exists(NS)
        yield cat, proxy
        cat.close()


@pytest.fixture
def guarded(plain):
    cat, proxy = plain
    proxy.faults.clear()
    yield cat, proxy
    proxy.faults.clear()


def commit_path(name: str) -> str:
    return rf"/namespaces/[^/]+/tables/{name}$"


def commits_sent(proxy, name: str) -> int:
    return proxy.count(kind="commit", table=f"{NS}.{name}")


def referenced_files(table) -> set[str]:
    """The metadata file, every snapshot's manifest list, manifests and data files."""
    files = {table.metadata_location}
    for snapshot in table.snapshots():
        files.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            files.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                files.add(entry.data_file.file_path)
    return files


def assert_every_referenced_file_exists(cat, name: str) -> pa.Table:
    table = cat.load_table(f"{NS}.{name}")
    missing = sorted(f for f in referenced_files(table) if not table.io.new_input(f).exists())
    assert not missing, f"the table references deleted files: {missing}"
    return table.scan().to_arrow()


def ids(data: pa.Table) -> list[int]:
    return sorted(data.column("id").to_pylist())


def append_then_fault(cat, proxy, add_faults) -> tuple[str, BaseException | None]:
    """A table with 100 rows, then an append of 100 more under `add_faults(path)`: (name, error)."""
    name = f"h_{uuidlib.uuid4().hex[:8]}"
    table = cat.create_table(f"{NS}.{name}", ID_SCHEMA)
    table.append(id_rows(0, 100))
    add_faults(commit_path(name))
    try:
        table.append(id_rows(100, 200))
    except Exception as exc:  # noqa: BLE001 - the type is what the test checks
        return name, exc
    return name, None


# ---------------------------------------------------------------------------- 503/429 + Retry-After
@pytest.mark.parametrize("then", [401, 403, 404])
def test_503_with_retry_after_then_a_refusal_is_not_resent_behind_the_guard(guarded, then, caplog):
    """A gateway forwards the commit (it lands) and answers 503 + Retry-After; the next attempt
    would be refused. The guard sees the 503 itself, finds its commit on the table, reports
    success; nothing re-sent the POST (a hidden re-send would meet the refusal, and the guard would
    call a landed commit failed, so PyIceberg would delete files the table references)."""
    cat, proxy = guarded
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")

    def faults(path: str) -> None:
        proxy.faults.add("after", "POST", path, status=503, headers=RETRY_AFTER)
        proxy.faults.add("error", "POST", path, status=then)

    name, error = append_then_fault(cat, proxy, faults)
    assert error is None, repr(error)
    assert commits_sent(proxy, name) == 2  # the first append's and this one: nothing re-sent
    assert proxy.faults.pending == 1  # the refusal was never met
    assert "landed although its answer was HTTP 503" in caplog.text
    assert ids(assert_every_referenced_file_exists(cat, name)) == list(range(200))


@pytest.mark.parametrize("kind", ["error", "after"])
def test_429_with_retry_after_then_403_is_retried_only_by_the_guard(guarded, kind):
    """429 + Retry-After (refused; or, "after", a gateway that forwarded it first), then 403: the
    guard's own, counted retry meets the 403, and no HTTP client re-sends either on its own. The
    outcome is success or ours, the rows are exact and every referenced file exists."""
    cat, proxy = guarded

    def faults(path: str) -> None:
        proxy.faults.add(kind, "POST", path, status=429, headers=RETRY_AFTER)
        proxy.faults.add("error", "POST", path, status=403)

    name, error = append_then_fault(cat, proxy, faults)
    assert error is None or isinstance(error, (CommitStateUnknownError, CommitFailedError)), repr(error)
    assert proxy.faults.pending == 0
    sent = [e for e in proxy.log if e["kind"] == "commit" and e["table"] == f"{NS}.{name}"][1:]
    # 429 then 403: exactly one attempt each (no hidden re-send of either), then PyIceberg's retry.
    assert [e["status"] for e in sent][:2] == [429, 403], sent
    data = assert_every_referenced_file_exists(cat, name)
    assert ids(data) == (list(range(200)) if error is None or kind == "after" else list(range(100)))


# ---------------------------------------------------------------------------- redirects
@pytest.mark.parametrize("op", ["append", "create"])
def test_a_307_on_a_commit_is_not_followed_and_not_resent(guarded, op):
    """307 would make requests re-send the POST to Location, uncounted by the guard. Not followed:
    nothing landed, the table shows no trace, so the commit is unknown and every file is kept."""
    cat, proxy = guarded
    name = f"r307_{uuidlib.uuid4().hex[:8]}"
    # Location: the same commit URL through the proxy (a balancer sending us to another node).
    if op == "append":
        table = cat.create_table(f"{NS}.{name}", ID_SCHEMA)
        table.append(id_rows(0, 100))
        location = f"{proxy.url}/v1/{cat.prefix}/namespaces/{NS}/tables/{name}"
        proxy.faults.add("redirect", "POST", commit_path(name), status=307, location=location)
        with pytest.raises(CommitStateUnknownError) as err:
            table.append(id_rows(100, 200))
        assert commits_sent(proxy, name) == 2
        assert ids(assert_every_referenced_file_exists(cat, name)) == list(range(100))
    else:
        tx = cat.create_table_transaction(f"{NS}.{name}", ID_SCHEMA)
        tx.append(id_rows(0, 100))
        location = f"{proxy.url}/v1/{cat.prefix}/namespaces/{NS}/tables/{name}"
        proxy.faults.add("redirect", "POST", commit_path(name), status=307, location=location)
        with pytest.raises(CommitStateUnknownError) as err:
            tx.commit_transaction()
        assert commits_sent(proxy, name) == 1
        assert not cat.table_exists(f"{NS}.{name}")
    text = str(err.value)
    assert "\n" not in text and "HTTP 307 redirect to" in text and location in text and "every file is kept" in text


def test_a_303_on_a_commit_is_never_taken_for_success(guarded):
    """303 would make requests GET Location; pointing at the table, that GET answers 200 with the
    table's metadata, which reads like a commit answer: PyIceberg would report an append that never
    landed as done. Not followed: unknown (the table does not show it), every file kept."""
    cat, proxy = guarded
    name = f"r303_{uuidlib.uuid4().hex[:8]}"
    table = cat.create_table(f"{NS}.{name}", ID_SCHEMA)
    table.append(id_rows(0, 100))
    location = f"{proxy.url}/v1/{cat.prefix}/namespaces/{NS}/tables/{name}"
    proxy.faults.add("redirect", "POST", commit_path(name), status=303, location=location)
    loads_before = proxy.count(kind="load", table=f"{NS}.{name}")
    with pytest.raises(CommitStateUnknownError, match="HTTP 303 redirect to"):
        table.append(id_rows(100, 200))
    assert commits_sent(proxy, name) == 2
    # The only GET after the 303 is the guard's own reconciliation load, not a followed redirect.
    assert proxy.count(kind="load", table=f"{NS}.{name}") - loads_before == 1
    assert ids(assert_every_referenced_file_exists(cat, name)) == list(range(100))


def test_a_303_after_the_commit_landed_is_success_once(guarded, caplog):
    """A server that took the POST and answers 303 See Other (Location: the table): not followed;
    the guard looks the commit up on the table, finds it, and reports success once."""
    cat, proxy = guarded
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")
    name = f"a303_{uuidlib.uuid4().hex[:8]}"
    table = cat.create_table(f"{NS}.{name}", ID_SCHEMA)
    table.append(id_rows(0, 100))
    location = f"{proxy.url}/v1/{cat.prefix}/namespaces/{NS}/tables/{name}"
    proxy.faults.add("after", "POST", commit_path(name), status=303, headers=[("Location", location)])
    table.append(id_rows(100, 200))
    assert proxy.faults.pending == 0 and commits_sent(proxy, name) == 2
    assert "landed although its answer was HTTP 303 redirect to" in caplog.text
    assert ids(assert_every_referenced_file_exists(cat, name)) == list(range(200))


@pytest.mark.parametrize("status", [202, 300])
def test_an_answer_neither_200_nor_an_error_is_looked_up(guarded, status, caplog):
    """A commit that landed answered 202 (or a 3xx without Location, which requests does not
    follow): no error status says it was refused, so the table decides. Read as a refusal, PyIceberg
    would delete the manifests of a commit the table references."""
    cat, proxy = guarded
    caplog.set_level(logging.INFO, logger="pyspark_catalog_ext.pyiceberg")

    def faults(path: str) -> None:
        proxy.faults.add("after", "POST", path, status=status)

    name, error = append_then_fault(cat, proxy, faults)
    assert error is None, repr(error)
    assert f"landed although its answer was HTTP {status}" in caplog.text
    assert ids(assert_every_referenced_file_exists(cat, name)) == list(range(200))
