"""The sample history as the store keeps it: what goes in comes back, on
the new process's clock; what is too old, too big or not ours is left out."""

import base64
import itertools
import json
import zlib
from dataclasses import replace

import numpy as np
import pytest

from tiertune import sample_store
from tiertune.rates import HistoryBook
from tiertune.sampling import PoolCounters, PoolSample


def sample(i: int, base: bool = True, mono0: float = 5000.0, wall0: float = 1.8e9) -> PoolSample:
    c = PoolCounters(num_objects=100 + i, num_bytes=(100 + i) << 22, num_objects_dirty=i,
                     num_flush=3 * i, num_flush_kb=3 * i * 4096, num_write=50 * i,
                     num_write_kb=50 * i * 4096, num_read=7 * i, num_read_kb=7 * i * 64,
                     num_promote=i, num_flush_mode_low=i % 2, num_evict_mode_full=0)
    b = PoolCounters(num_write=3 * i, num_write_kb=3 * i * 4096) if base else None
    return PoolSample(pool_id=7, mono=mono0 + 30.0 * i, wall=wall0 + 30.0 * i, num_pg=32,
                      counters=c, base=b, acting=96 - i % 2, base_acting=64 if base else 0)


def entries(n: int, **kw):
    return [(sample(i, base=i % 3 != 0, **kw), i << 22, True) for i in range(n)]


def test_what_is_saved_comes_back_on_the_new_clock():
    saved = entries(10)
    # a new mgr, one minute after the last sample, on a clock of its own
    now_wall = saved[-1][0].wall + 60.0
    back, problem = sample_store.decode(sample_store.encode(saved), now_mono=12.0,
                                        now_wall=now_wall, max_age_s=3600)
    assert problem is None and len(back) == 10
    for (s0, d0, m0), (s1, d1, m1) in zip(saved, back, strict=True):
        assert d1 == d0 and m1 == m0
        assert s1.counters == s0.counters and s1.base == s0.base and s1.num_pg == s0.num_pg
        assert (s1.acting, s1.base_acting) == (s0.acting, s0.base_acting)
        assert s1.pool_id == 7 and s1.wall == pytest.approx(s0.wall, abs=1e-3)
        # placed by wall time: the same age on the new clock
        assert s1.mono == pytest.approx(12.0 - (now_wall - s0.wall), abs=1e-3)


def test_rates_over_the_restored_history_are_the_ones_before():
    saved = entries(10)
    before = HistoryBook(120)
    for s, d, _ in saved:
        before.record({7: s}, {7: d}, [7])
    after = HistoryBook(120)
    back, _ = sample_store.decode(sample_store.encode(before.saved_entries(7)), 0.0,
                                  saved[-1][0].wall, 3600)
    assert after.restore(7, back) == 10
    old, new = before.get(7), after.get(7)
    assert old is not None and new is not None
    for a, b in zip(old.entries, new.entries, strict=True):
        if a.rates is None:
            assert b.rates is None
            continue
        assert b.rates is not None
        for k, v in a.rates.as_dict().items():
            assert b.rates.as_dict()[k] == pytest.approx(v, abs=1e-3), k


def test_samples_older_than_the_window_or_from_the_future_are_left_out():
    saved = entries(10)
    last = saved[-1][0].wall
    back, _ = sample_store.decode(sample_store.encode(saved), 0.0, last + 10, max_age_s=100)
    assert [s.wall for s, *_ in back] == [s.wall for s, *_ in saved if last + 10 - s.wall <= 100]
    # a wall clock stepped back before the newest sample: that sample is not "now"
    back, _ = sample_store.decode(sample_store.encode(saved), 0.0, last - 45, 3600)
    assert len(back) == 8


def test_a_long_history_is_cut_to_its_newest_samples_under_the_size_limit():
    saved = entries(3000)
    assert len(sample_store.encode(saved)) <= sample_store.MAX_TEXT_BYTES
    text = sample_store.encode(saved, max_bytes=4096)
    assert len(text) <= 4096
    back, _ = sample_store.decode(text, 0.0, saved[-1][0].wall, 1e9)
    assert 10 < len(back) < 3000
    assert back[-1][0].counters == saved[-1][0].counters     # the newest kept
    walls = [s.wall for s, *_ in back]
    assert walls == sorted(walls)


def table_text(rows, columns, n=None):
    """A text in the store's format from plain rows (what another version
    of the module might have written)."""
    t = np.array(rows, dtype='<i8').reshape(len(rows), len(columns))
    t[1:] = np.diff(t, axis=0)
    return json.dumps({'v': 1, 'pool': 7, 'rows': len(rows) if n is None else n,
                       'columns': list(columns),
                       'data': base64.b64encode(zlib.compress(t.tobytes())).decode()})


@pytest.mark.parametrize('text,words', [
    ('{not json', 'not a sample history'),
    (json.dumps({'v': 99}), 'unknown format version 99'),
    (json.dumps({'v': 1, 'pool': 7}), 'not a sample history'),
])
def test_a_text_that_is_not_ours_gives_nothing_and_says_why(text, words):
    back, problem = sample_store.decode(text, 0.0, 1.8e9, 3600)
    assert back == [] and problem is not None and words in problem


def test_a_table_that_does_not_match_its_row_count_is_refused():
    rows = [sample_store._row(s, d) for s, d, _ in entries(4)]
    back, problem = sample_store.decode(table_text(rows, sample_store.COLUMNS, n=5), 0.0,
                                        1.8e9 + 200, 3600)
    assert back == [] and problem is not None and 'for 5 rows' in problem
    back, problem = sample_store.decode(json.dumps({'v': 1, 'pool': 7, 'rows': 1, 'columns': [],
                                                    'data': '!!'}), 0.0, 1.8e9, 3600)
    assert back == [] and problem is not None and 'not a sample history' in problem


def test_a_counter_the_text_lacks_counts_as_zero_and_one_it_adds_is_ignored():
    saved = [(replace(s, base=None), d, m) for s, d, m in entries(3)]
    cols = list(sample_store.COLUMNS)
    drop = cols.index('num_promote')
    rows = [[*r[:drop], *r[drop + 1:], 99] for r in (sample_store._row(s, d) for s, d, _ in saved)]
    text = table_text(rows, [*cols[:drop], *cols[drop + 1:], 'num_from_the_future'])
    back, problem = sample_store.decode(text, 0.0, 1.8e9 + 100, 3600)
    assert problem is None and [s.counters.num_promote for s, *_ in back] == [0, 0, 0]
    assert [s.counters.num_write for s, *_ in back] == [s.counters.num_write for s, *_ in saved]
    assert all(s.base is None for s, *_ in back)


def test_a_text_written_before_acting_was_stored_reads_it_as_zero():
    # Its first new sample then has a larger acting: that one interval
    # (across the upgrade's failover) is left unrated, nothing else.
    saved = entries(3)
    cols = [c for c in sample_store.COLUMNS if c not in ('acting', 'base.acting')]
    rows = [[v for c, v in zip(sample_store.COLUMNS, sample_store._row(s, d), strict=True)
             if c in cols] for s, d, _ in saved]
    back, problem = sample_store.decode(table_text(rows, cols), 0.0, 1.8e9 + 100, 3600)
    assert problem is None and [(s.acting, s.base_acting) for s, *_ in back] == [(0, 0)] * 3
    assert [s.counters for s, *_ in back] == [s.counters for s, *_ in saved]


def test_nothing_stored_is_nothing_restored():
    assert sample_store.decode(None, 0.0, 1.8e9, 3600) == ([], None)
    assert sample_store.decode(sample_store.encode([]), 0.0, 1.8e9, 3600) == ([], None)


def test_rows_cached_from_the_last_save_give_the_same_text():
    saved = entries(30)
    cache: dict = {}
    first = sample_store.encode(saved[:20], cache=cache)
    assert first == sample_store.encode(saved[:20])
    assert len(cache) == 20
    # ten samples later, the oldest ten gone: the same text as without a cache
    assert sample_store.encode(saved[10:], cache=cache) == sample_store.encode(saved[10:])
    assert sorted(cache) == sorted(s.mono for s, *_ in saved[10:])


def test_the_overlay_the_samples_were_taken_under_is_kept_beside_them():
    from tiertune.sample_store import encode, stored_overlay
    assert stored_overlay(encode([], overlay=True)) is True
    assert stored_overlay(encode([], overlay=False)) is False
    assert stored_overlay(encode([])) is None           # an older mgr's text says nothing
    assert stored_overlay('not json') is None and stored_overlay(None) is None


def test_a_wall_clock_stepped_on_the_mgr_that_took_them_does_not_change_the_intervals():
    """Restored samples are spaced by their monotonic times; only the newest
    is placed by its wall time."""
    saved = entries(10)
    # the old mgr's wall clock stepped back 25 s after the fifth sample
    saved = [(replace(s, wall=s.wall - (25.0 if i >= 5 else 0.0)), d, m)
             for i, (s, d, m) in enumerate(saved)]
    now_wall = saved[-1][0].wall + 60.0
    back, problem = sample_store.decode(sample_store.encode(saved), 100.0, now_wall, 3600)
    assert problem is None and len(back) == 10
    gaps = [b[0].mono - a[0].mono for a, b in itertools.pairwise(back)]
    assert gaps == pytest.approx([30.0] * 9, abs=2e-3)
    assert back[-1][0].mono == pytest.approx(100.0 - 60.0, abs=1e-3)
    book = HistoryBook(120)
    book.restore(7, back)
    rated = [e.rates for e in book.get(7).entries if e.rates is not None]
    assert {round(r.interval_s) for r in rated} == {30}


def test_the_base_pool_id_comes_back_and_an_old_text_reads_it_as_not_known():
    saved = [(replace(s, base_pool_id=4 if s.base is not None else -1), d, m)
             for s, d, m in entries(4)]
    back, _ = sample_store.decode(sample_store.encode(saved), 0.0, 1.8e9 + 200, 3600)
    assert [s.base_pool_id for s, *_ in back] == [-1, 4, 4, -1]
    # written before base.id and mono_ms were kept: placed by wall time
    cols = [c for c in sample_store.COLUMNS if c not in ('base.id', 'mono_ms')]
    rows = [[v for c, v in zip(sample_store.COLUMNS, sample_store._row(s, d), strict=True)
             if c in cols] for s, d, _ in saved]
    back, problem = sample_store.decode(table_text(rows, cols), 0.0, 1.8e9 + 200, 3600)
    assert problem is None and [s.base_pool_id for s, *_ in back] == [-1] * 4
    assert [s.mono for s, *_ in back] == pytest.approx([-200.0, -170.0, -140.0, -110.0])


def test_samples_kept_after_a_counter_reset_all_come_back():
    """PGs recreated at the seventh sample: the counters drop for good, and
    the mgr keeps the samples from DIP_CONFIRM_S on, the first without
    rates.  Restored, that one was checked again against the one before
    it and held back as a dip, and the next within DIP_CONFIRM_S with it
    (a review helper)."""
    book = HistoryBook(120)
    for i in range(12):
        s = replace(sample(i), acting=96)
        if i >= 6:
            s = replace(s, counters=sample(i - 6).counters)
        book.record({7: s}, {7: 0}, [7])
    before = book.get(7)
    assert before is not None
    back, _ = sample_store.decode(sample_store.encode(book.saved_entries(7)), 0.0,
                                  before.entries[-1].sample.wall, 1e9)
    after = HistoryBook(120)
    assert after.restore(7, back) == len(before)
    restored = after.get(7)
    assert restored is not None
    assert [e.rates is None for e in restored.entries] == [e.rates is None
                                                           for e in before.entries]
