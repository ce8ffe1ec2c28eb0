"""The collector's pause: counted across threads, and (for ``tcfl ci``) large pauses frozen."""

from __future__ import annotations

import gc

from app.analysis.gcpause import freeze_large_pauses, gc_paused


def test_a_pause_nests_and_gives_the_collector_back() -> None:
    assert gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_only_a_pause_that_leaves_many_new_objects_alive_freezes_them() -> None:
    gc.collect()
    frozen = gc.get_freeze_count()
    freeze_large_pauses(5_000)
    try:
        with gc_paused():
            small = [[i] for i in range(100)]  # one failure's answer: left to the young collection
        assert gc.get_freeze_count() == frozen
        with gc_paused():
            kept = [[i] for i in range(20_000)]  # a new set of scripts' records: frozen
        assert gc.get_freeze_count() >= frozen + 20_000
    finally:
        freeze_large_pauses(0)
        gc.unfreeze()
    with gc_paused():
        again = [[i] for i in range(20_000)]  # switched off: never frozen
    assert gc.get_freeze_count() == 0
    assert len(small) + len(kept) + len(again) == 40_100
