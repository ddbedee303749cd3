"""The agent-priority measurement's report (pure: no cluster here; the
measurement itself needs one and is run by hand, see its docstring)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agent_priority as apr


def _run(evicting: list, flush_only: list) -> dict:
    samples = [{'t': float(k), 'dirty': {'3.0': e, '3.1': f, '3.2': 16}}
               for k, (e, f) in enumerate(zip(evicting, flush_only, strict=True))]
    return {'primary': {'3.0': 1, '3.1': 1, '3.2': 0}, 'evicting': {'1': '3.0'},
            'objects': {'3.0': 26, '3.1': 16, '3.2': 16}, 'run': apr.RUN, 'samples': samples}


def test_report_says_what_the_flush_only_pgs_flushed_meanwhile() -> None:
    # Served by level: the evicting PG drains while its OSD's other PG waits.
    text = apr.report(_run([26, 13, 0, 0], [16, 16, 15, 0]))
    assert 'osd.1: evicting PG 3.0, flush-only PGs 3.1' in text
    assert 'flushed half of its own (13 objects, 1 s): the flush-only PGs had flushed 0 of 16' \
        in text
    assert 'flushed all of its own (26 objects, 2 s): the flush-only PGs had flushed 1 of 16' \
        in text
    # osd.0 holds no evicting PG: not reported
    assert 'osd.0' not in text


def test_report_says_when_the_evicting_pg_never_drained() -> None:
    text = apr.report(_run([26, 20], [16, 10]))
    assert 'had not flushed half of its own' in text and 'had not flushed all of its own' in text
