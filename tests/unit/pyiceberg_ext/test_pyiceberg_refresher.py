"""The PyIceberg credential refresher on a fake clock: when it renews, single flight, backoff,
idle tables, longest prefix, environment knobs. Credentials come from a user source (a real
feature: `pyiceberg_catalog(..., credential_source=...)`), so no catalog is needed."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from pyspark_catalog_ext.errors import ConfigError, CredentialRefreshError
from pyspark_catalog_ext.pyiceberg_ext import CredentialRefresher, refresh_policy
from pyspark_catalog_ext.refresh import FunctionSource, RefreshPolicy, StorageCredentials
from pyspark_catalog_ext.refresh.rules import hard_margin_s
from tests.fake_clock import FakeClock

LIFETIME = 100.0
POLICY = RefreshPolicy(check_interval_s=1, min_ahead_s=10, lifetime_fraction=0.3, initial_backoff_s=4, max_backoff_s=8)


def vended(clock: FakeClock, n: int, lifetime: float = LIFETIME) -> dict:
    return {"s3.access-key-id": f"AK{n}", "s3.secret-access-key": f"SK{n}",
            "s3.session-token-expires-at-ms": str(int((clock.now() + lifetime) * 1000))}


class CountingSource:
    """A user source whose keys live LIFETIME s on the fake clock; can be told to fail."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.calls, self.fail, self.gate = clock, 0, False, None

    def fetch(self, table):
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail:
            raise RuntimeError("token service down")
        expires = dt.datetime.fromtimestamp(self.clock.now() + LIFETIME, dt.timezone.utc)
        return StorageCredentials(f"AK-src-{self.calls}", "secret", "tok", expires)


def make(clock: FakeClock, source=None) -> tuple[CredentialRefresher, CountingSource]:
    source = source or CountingSource(clock)
    refresher = CredentialRefresher("lake", client=None, policy=POLICY, source=source, clock=clock.now, sleep=clock.sleep,
                                    background=False)
    return refresher, source


def test_renews_at_max_of_min_ahead_and_fraction_of_lifetime():
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    entry.slot_for("s3://b/db/t/data/f1.parquet")  # in use
    # due when less than max(10, 0.3 x 100) = 30 s remain: at +70 s
    clock.t += 69.5
    assert refresher.scheduler.tick() == [] and source.calls == 0
    clock.t += 1
    assert refresher.scheduler.tick() == [entry.handle] and source.calls == 1
    generation, keys, _ = entry.slot_for("s3://b/db/t/data/f2.parquet")
    assert generation == 2 and keys["s3.access-key-id"] == "AK-src-1"
    row = refresher.status()[0]
    assert row["strategy"] == "user-source:CountingSource" and row["refreshes_by_strategy"] == {"user-source:CountingSource": 1}
    assert "secret" not in repr(entry) and "SK0" not in str(refresher.status())


def test_idle_table_is_left_alone_then_renewed_on_use():
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    clock.t += 500  # never used since fetched: the scheduler skips it
    assert refresher.scheduler.tick() == [] and source.calls == 0
    generation, _, _ = entry.slot_for("s3://b/db/t/x")
    refresher.ensure_fresh(entry, generation)  # what RefreshingFileIO does before opening a file
    assert source.calls == 1 and entry.generation == generation + 1


def test_a_reader_waits_for_new_keys_in_the_last_quarter_or_10_s():
    """Spark's hard margin: min(10 s, lifetime / 4) before expiry a file is not opened with the old keys."""
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    clock.t += 89  # 11 s left of 100: still good to open a file
    assert refresher.ensure_fresh(entry, entry.generation) is False and source.calls == 0
    clock.t += 2  # 9 s left
    assert refresher.ensure_fresh(entry, entry.generation) is True and source.calls == 1
    entry = refresher.track(("db", "s"), vended(clock, 1, lifetime=8), [], location="s3://b/db/s", staged=False)
    clock.t += 5.9  # 2.1 s of 8 left: more than a quarter
    assert refresher.ensure_fresh(entry, entry.generation) is False
    clock.t += 0.2  # 1.9 s left
    assert refresher.ensure_fresh(entry, entry.generation) is True and source.calls == 2
    assert hard_margin_s(0, 3) == 1.0 and hard_margin_s(0, 3600) == 10.0  # never under 1 s


def test_backoff_while_valid_then_recovers():
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    entry.slot_for("s3://b/db/t/f")
    clock.t += 71
    source.fail = True
    assert refresher.scheduler.tick() == [] and refresher.scheduler.failures(entry.handle) == 1
    clock.t += 1  # within the backoff (2-4 s): no new attempt
    refresher.scheduler.tick()
    assert source.calls == 1
    clock.t += 4
    refresher.scheduler.tick()
    assert source.calls == 2 and refresher.scheduler.failures(entry.handle) == 2
    assert "token service down" in refresher.status()[0]["last_error"]
    source.fail = False
    clock.t += 8
    assert refresher.scheduler.tick() == [entry.handle] and refresher.scheduler.failures(entry.handle) == 0


def test_single_flight_per_table():
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    clock.t += LIFETIME  # expired: every reader wants new keys at once
    source.gate = threading.Event()
    generation = entry.generation
    threads = [threading.Thread(target=refresher.ensure_fresh, args=(entry, generation)) for _ in range(8)]
    for t in threads:
        t.start()
    source.gate.set()
    for t in threads:
        t.join(5)
    assert source.calls == 1 and entry.generation == generation + 1


def test_readers_wait_out_the_backoff_until_their_timeout():
    """Expired keys and a source that fails: a reader waits for each next attempt (one per backoff
    step, never one per file) until timeout-ms, then gets the last error; the next reader waits for
    the attempt after that, which a recovered source answers (credential-rules: the shim's readers)."""
    from pyspark_catalog_ext.errors import CredentialRefreshError

    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    clock.t += LIFETIME
    source.fail = True
    with pytest.raises(CredentialRefreshError, match="token service down"):
        refresher.ensure_fresh(entry, entry.generation)
    assert POLICY.timeout_s == 30  # attempts at 0, 4, 12, 20 and 28 s; the next (36 s) is past the deadline
    assert source.calls == 5 and clock.sleeps == [4, 8, 8, 8] and entry.failures == 5
    source.fail = False
    assert refresher.ensure_fresh(entry, entry.generation) is True  # waits 8 s for the attempt at 36 s
    assert source.calls == 6 and clock.sleeps[-1] == 8 and entry.failures == 0


def test_keys_renewed_by_another_thread_during_the_wait_end_it_without_another_request():
    clock = FakeClock()
    refresher, source = make(clock)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    clock.t += LIFETIME
    source.fail = True
    with pytest.raises(CredentialRefreshError):
        refresher.refresh(entry)  # a failed renewal: backoff until +4 s
    source.fail = False

    def sleep_while_the_schedule_renews(seconds: float) -> None:
        clock.sleep(seconds)
        refresher.refresh(entry)  # another thread renews meanwhile

    refresher._sleep = sleep_while_the_schedule_renews
    assert refresher.ensure_fresh(entry, entry.generation) is True
    assert source.calls == 2 and entry.failures == 0


def test_same_table_handed_out_twice_shares_one_entry():
    clock = FakeClock()
    refresher, _ = make(clock)
    first = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    second = refresher.track(("db", "t"), vended(clock, 1), [], location="s3://b/db/t", staged=False)
    assert first is second and first.generation == 2 and len(refresher.tables()) == 1


def test_longest_prefix_wins():
    clock = FakeClock()
    refresher, _ = make(clock)
    creds = [{"prefix": "s3://b/", "config": vended(clock, 1)},
             {"prefix": "s3://b/db/t/data/", "config": vended(clock, 2)},
             {"prefix": "s3://b/db/t", "config": vended(clock, 3)}]
    entry = refresher.track(("db", "t"), {}, creds, location="s3://b/db/t", staged=False)
    assert entry.slot_for("s3://b/db/t/data/f.parquet")[1]["s3.access-key-id"] == "AK2"
    assert entry.slot_for("s3://b/db/t/metadata/m.json")[1]["s3.access-key-id"] == "AK3"
    assert entry.slot_for("s3://b/other/x")[1]["s3.access-key-id"] == "AK1"


def test_function_source():
    clock = FakeClock()
    src = FunctionSource(lambda table: StorageCredentials("AKF", "S", expires_at=dt.datetime.fromtimestamp(
        clock.now() + 50, dt.timezone.utc), prefix=table.location))
    refresher, _ = make(clock, src)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    refresher.refresh(entry)
    assert entry.slot_for("s3://b/db/t/f")[1]["s3.access-key-id"] == "AKF"


def test_knobs_from_spark_catalog_properties_then_environment():
    env = {"PYSPARK_CATALOG_EXT_REFRESH_CHECK_INTERVAL_S": "5", "PYSPARK_CATALOG_EXT_REFRESH_MIN_AHEAD_S": "42",
           "PYSPARK_CATALOG_EXT_REFRESH_LIFETIME_FRACTION": "0.5"}
    policy = refresh_policy(environ=env)
    assert (policy.check_interval_s, policy.min_ahead_s, policy.lifetime_fraction) == (5, 42, 0.5)
    assert policy.initial_backoff_s == RefreshPolicy().initial_backoff_s
    # Spark's catalog properties (the names and units the JVM reads) win over the environment.
    props = {"catalog-ext.refresh.min-ahead-ms": "7000", "catalog-ext.refresh.lifetime-fraction": "0.25",
             "catalog-ext.refresh.max-backoff-ms": "9000", "uri": "http://x"}
    policy = refresh_policy(props, environ=env)
    assert (policy.check_interval_s, policy.min_ahead_s, policy.lifetime_fraction, policy.max_backoff_s) == (5, 7, 0.25, 9)
    with pytest.raises(ConfigError, match="PYSPARK_CATALOG_EXT_REFRESH_MIN_AHEAD_S='soon' is not a number"):
        refresh_policy(environ={"PYSPARK_CATALOG_EXT_REFRESH_MIN_AHEAD_S": "soon"})
    with pytest.raises(ConfigError, match="^Bad catalog property catalog-ext.refresh.check-interval-ms='1m': use a whole number from 1 to 3600000$"):
        refresh_policy({"catalog-ext.refresh.check-interval-ms": "1m"}, environ={})
    with pytest.raises(ConfigError, match="lifetime_fraction"):
        refresh_policy(environ={"PYSPARK_CATALOG_EXT_REFRESH_LIFETIME_FRACTION": "2"})


def test_a_failing_source_leaks_no_secret(caplog):
    """What a source's error carries (an STS message with keys, say) is redacted in the log and status."""
    clock = FakeClock()

    def leaky(table):
        raise RuntimeError("AssumeRole answer unusable: token=FQoGZXIvYXdzELEAKED secret_access_key: wJalrLEAKED")

    refresher, _ = make(clock, FunctionSource(leaky))
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    entry.slot_for("s3://b/db/t/f")
    clock.t += 71
    with caplog.at_level("WARNING"):
        assert refresher.scheduler.tick() == []
    assert refresher.scheduler.failures(entry.handle) == 1
    shown = caplog.text + repr(refresher.status())
    assert "AssumeRole answer unusable" in shown and "LEAKED" not in shown


def test_background_thread_ends_when_no_table_is_left():
    import gc

    clock = FakeClock()
    policy = RefreshPolicy(check_interval_s=0.02, min_ahead_s=10, lifetime_fraction=0.3)
    refresher = CredentialRefresher("lake", client=None, policy=policy, source=CountingSource(clock), clock=clock.now)
    entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
    thread = refresher._thread
    assert thread is not None and thread.is_alive() and thread.daemon
    del entry
    gc.collect()
    thread.join(2)
    assert not thread.is_alive() and refresher.tables() == []
    refresher.close()



def test_a_reader_of_due_keys_wakes_a_late_schedule():
    """The schedule passes once a minute here; a reader that finds its keys due (past their renewal
    time, before the hard margin) starts the pass at once and goes on with the keys it holds
    (refresh-scenarios.json `reader-of-due-keys-starts-their-renewal`, on the real thread)."""
    import time

    clock = FakeClock()
    policy = RefreshPolicy(check_interval_s=60, min_ahead_s=10, lifetime_fraction=0.3)
    source = CountingSource(clock)
    refresher = CredentialRefresher("lake", client=None, policy=policy, source=source, clock=clock.now)
    try:
        entry = refresher.track(("db", "t"), vended(clock, 0), [], location="s3://b/db/t", staged=False)
        entry.slot_for("s3://b/db/t/f")  # in use
        clock.t += 75  # due at +70 s, hard margin at +90 s
        assert refresher.ensure_fresh(entry, entry.generation) is False
        deadline = time.monotonic() + 10
        while source.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert source.calls == 1
    finally:
        refresher.close()


def test_a_pass_does_not_stall_behind_a_table_whose_renewal_is_held():
    """A reader waiting out one table's backoff holds that table's lock; the schedule's pass renews
    the other tables meanwhile instead of waiting for it."""
    clock = FakeClock()
    refresher, source = make(clock)
    held = refresher.track(("db", "held"), vended(clock, 0), [], location="s3://b/db/held", staged=False)
    other = refresher.track(("db", "other"), vended(clock, 1), [], location="s3://b/db/other", staged=False)
    for entry in (held, other):
        entry.slot_for(entry.location + "/f")  # in use
    clock.t += 75  # both due
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with held.refresh_lock:
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert holding.wait(5)
    passed: list[list[str]] = []
    ticker = threading.Thread(target=lambda: passed.append(refresher.scheduler.tick()), daemon=True)
    ticker.start()
    ticker.join(3)
    release.set()
    holder.join(5)
    assert passed == [[other.handle]] and source.calls == 1


def test_keys_without_an_expiry_are_renewed_after_the_assumed_lifetime():
    """Unity 0.6 (unitycatalog#1885) vends keys that do expire without saying when: they count as
    expiring `assumed_lifetime_s` after their fetch, so they are renewed before that; 0 trusts them."""
    clock = FakeClock()
    policy = RefreshPolicy(check_interval_s=1, min_ahead_s=10, lifetime_fraction=0.3, initial_backoff_s=4, max_backoff_s=8,
                           assumed_lifetime_s=100)
    source = CountingSource(clock)
    refresher = CredentialRefresher("lake", client=None, policy=policy, source=source, clock=clock.now, sleep=clock.sleep, background=False)
    no_expiry = {"s3.access-key-id": "AK0", "s3.secret-access-key": "SK0"}
    entry = refresher.track(("db", "t"), no_expiry, [], location="s3://b/db/t", staged=False)
    entry.slot_for("s3://b/db/t/data/f1.parquet")
    clock.t += 69.5
    assert refresher.scheduler.tick() == [] and source.calls == 0
    clock.t += 1  # as a 100 s lifetime: due 30 s before the assumed end
    assert refresher.scheduler.tick() == [entry.handle] and source.calls == 1

    trusting = CredentialRefresher("lake", client=None, policy=RefreshPolicy(assumed_lifetime_s=0), source=CountingSource(clock),
                                   clock=clock.now, background=False)
    kept = trusting.track(("db", "u"), no_expiry, [], location="s3://b/db/u", staged=False)
    kept.slot_for("s3://b/db/u/f")
    clock.t += 10 * 86400
    assert trusting.scheduler.tick() == []  # 0: keys without expiry are trusted forever


def test_the_assumed_lifetime_travels_to_spark_as_its_catalog_property():
    assert RefreshPolicy(assumed_lifetime_s=900).catalog_properties()["catalog-ext.refresh.assumed-lifetime-ms"] == "900000"
    assert refresh_policy({"catalog-ext.refresh.assumed-lifetime-ms": "5000"}, environ={}).assumed_lifetime_s == 5


def test_an_empty_storage_credential_entry_is_ignored():
    """lakekeeper#1923: an extra entry with an empty config must not become a slot without keys."""
    clock = FakeClock()
    refresher, _ = make(clock)
    creds = [{"prefix": "s3://b", "config": {}}, {"prefix": "s3://b/db/t", "config": vended(clock, 0)}]
    entry = refresher.track(("db", "t"), {}, creds, location="s3://b/db/t", staged=False)
    assert entry.slot_for("s3://b/db/t/data/f.parquet")[1]["s3.access-key-id"] == "AK0"
    assert [s.prefix for s in entry._slots] == ["s3://b/db/t"]


# ------------------------------------------------------------------ a catalog's credential cache
EARLY = RefreshPolicy(check_interval_s=1, min_ahead_s=0, lifetime_fraction=0.6, initial_backoff_s=4, max_backoff_s=8)


class CachingSource:
    """Keys behind a credential cache as Polaris keeps one: the keys it minted come back until the
    shorter of `cache_s` and half their lifetime (or, with `buffer_s`, until that long before their
    expiry) has passed; then new ones."""

    def __init__(self, clock: FakeClock, cache_s: float = 1e9, buffer_s: float | None = None) -> None:
        self.clock, self.cache_s, self.buffer_s = clock, cache_s, buffer_s
        self.calls, self.minted, self._keys, self._until = 0, 0, None, float("-inf")

    def fetch(self, table):
        self.calls += 1
        now = self.clock.now()
        if now >= self._until:
            self.minted += 1
            expires = dt.datetime.fromtimestamp(now + LIFETIME, dt.timezone.utc)
            self._keys = StorageCredentials(f"AK-cache-{self.minted}", "secret", f"tok-{self.minted}", expires)
            window = LIFETIME - self.buffer_s if self.buffer_s is not None else LIFETIME / 2
            self._until = now + min(self.cache_s, window)
        return self._keys


def _tracked(clock: FakeClock, source: CachingSource, policy: RefreshPolicy = EARLY):
    refresher = CredentialRefresher("lake", client=None, policy=policy, source=source, clock=clock.now, sleep=clock.sleep,
                                    background=False)
    entry = refresher.track(("db", "t"), source.fetch(None).to_config(), [], location="s3://b/db/t", staged=False)
    entry.slot_for("s3://b/db/t/f")  # in use
    return refresher, entry


def test_the_same_keys_from_a_refresh_are_no_renewal_and_are_asked_for_again_after_the_cache_window():
    clock = FakeClock()
    source = CachingSource(clock)
    refresher, entry = _tracked(clock, source)
    clock.t += 40.5  # due: 59.5 s of 100 left (< 0.6 x 100); the catalog's cache entry lives until +50 s
    assert refresher.scheduler.tick() == [] and source.calls == 2 and entry.generation == 1
    row = refresher.status()[0]
    assert row["cached_answers"] == 1 and row["refreshes_by_strategy"] == {} and row["failures"] == 0
    assert 1050 < row["not_before_s"] <= 1053  # half-way from our fetch to the expiry, a little past it
    for _ in range(9):  # every tick before then: nobody asks the catalog
        clock.t += 1
        assert refresher.scheduler.tick() == []
    assert source.calls == 2
    clock.t = row["not_before_s"]
    assert refresher.scheduler.tick() == [entry.handle] and entry.generation == 2
    _, keys, _ = entry.slot_for("s3://b/db/t/g")
    assert keys["s3.access-key-id"] == "AK-cache-2" and refresher.status()[0]["refreshes_by_strategy"] == {
        "user-source:CachingSource": 1}


def test_a_reader_in_the_hard_margin_keeps_valid_keys_while_the_cache_holds_them_and_fails_once_they_expire():
    clock = FakeClock()
    source = CachingSource(clock, buffer_s=3)  # a cache that keeps keys until 3 s before they expire
    refresher, entry = _tracked(clock, source)
    clock.t += 91  # 9 s left: inside the 10 s hard margin
    assert refresher.ensure_fresh(entry, entry.generation) is True and source.calls == 2 and entry.generation == 1
    clock.t += 1  # within the policy's first backoff: the same keys still hold, nobody asks
    assert refresher.ensure_fresh(entry, entry.generation) is False and source.calls == 2
    clock.t += 4  # 4 s left: asked again, still cached; next in half of what is left
    refresher.ensure_fresh(entry, entry.generation)
    assert source.calls == 3 and entry.generation == 1
    clock.t += 1.5
    assert refresher.ensure_fresh(entry, entry.generation) is False and source.calls == 3
    clock.t += 0.5  # 2 s left: past the cache's buffer, new keys
    refresher.ensure_fresh(entry, entry.generation)
    assert source.calls == 4 and entry.generation == 2

    stuck = CachingSource(clock, buffer_s=-50)  # a cache that outlives its keys
    refresher, entry = _tracked(clock, stuck)
    clock.t += 101
    with pytest.raises(CredentialRefreshError, match="with the same keys, which expired .* its credential cache outlives"):
        refresher.ensure_fresh(entry, entry.generation)


def test_keys_s3_rejected_and_the_catalog_hands_back_say_so_in_one_line():
    from pyspark_catalog_ext.refresh.rejection import Rejection

    clock = FakeClock()
    source = CachingSource(clock)
    refresher, entry = _tracked(clock, source)
    clock.t += 10  # S3 rejects keys the catalog still caches
    with pytest.raises(CredentialRefreshError) as err:
        refresher.rejected(entry, entry.generation, Rejection("ExpiredToken", 400))
    assert "answered the refresh with the same keys (its credential cache" in str(err.value) and "\n" not in str(err.value)
    assert entry.generation == 1 and entry.reactive_refreshes == 0


def test_a_table_handed_out_again_with_the_same_keys_keeps_its_schedule():
    clock = FakeClock()
    source = CachingSource(clock)
    refresher, entry = _tracked(clock, source)
    clock.t += 20
    again = refresher.track(("db", "t"), source.fetch(None).to_config(), [], location="s3://b/db/t", staged=False)
    assert again is entry and entry.generation == 1 and entry.fetched_at_s == 1000.0


class StaticSource:
    """A catalog that vends the same keys without an expiry every time: static keys, no cache."""

    def __init__(self) -> None:
        self.calls = 0

    def fetch(self, table):
        self.calls += 1
        return StorageCredentials("AK-static", "secret", None, None)


def test_static_keys_without_a_stated_expiry_are_taken_again_past_their_assumed_lifetime():
    clock = FakeClock()
    source = StaticSource()
    policy = RefreshPolicy(min_ahead_s=0, lifetime_fraction=0.6, assumed_lifetime_s=100)
    refresher = CredentialRefresher("lake", client=None, policy=policy, source=source, clock=clock.now, sleep=clock.sleep,
                                    background=False)
    entry = refresher.track(("db", "t"), source.fetch(None).to_config(), [], location="s3://b/db/t", staged=False)
    clock.t += 101  # past the assumed lifetime: the same keys again are all this catalog has
    assert refresher.ensure_fresh(entry, entry.generation) is True
    assert entry.generation == 2 and refresher.status()[0]["failures"] == 0


class LeasingSource:
    """A user's source handing out the same static keys every time, each with an expiry LIFETIME on."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock

    def fetch(self, table):
        expires = dt.datetime.fromtimestamp(self.clock.now() + LIFETIME, dt.timezone.utc)
        return StorageCredentials("AK-lease", "secret", None, expires)


def test_the_same_keys_with_a_later_expiry_are_a_renewal_not_a_cached_answer():
    clock = FakeClock()
    source = LeasingSource(clock)
    refresher, entry = _tracked(clock, source)
    clock.t += 40.5  # due
    assert refresher.scheduler.tick() == [entry.handle] and entry.generation == 2
    row = refresher.status()[0]
    assert row["cached_answers"] == 0 and row["refreshes_by_strategy"] == {"user-source:LeasingSource": 1}
    _, _, until = entry.slot_for("s3://b/db/t/g")
    assert until > clock.t + LIFETIME / 2  # the later expiry was taken
