"""The cyclic garbage collector paused while a computation builds many small, acyclic records."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_state = {"holders": 0, "was_enabled": True, "freeze_at": 0}


def freeze_large_pauses(young: int) -> None:
    """From now on, a pause that ends with over ``young`` objects made in it still alive (0:
    never) moves every object to the collector's permanent generation (``gc.freeze``) instead of
    leaving them to the next young collection. For a one-shot batch (``tcfl ci``): such a pause
    built what a new set of scripts keeps for the rest of the job (its parse, its facts), which the
    young and then the middle collection would each walk again, for nothing. The price: cyclic
    garbage alive at that moment is never collected (a few records per new set of scripts).
    """
    with _gc_lock:
        _gc_state["freeze_at"] = young


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while an analysis builds its many small, acyclic records.

    The collector would walk them again and again for nothing (a large share of the static phase);
    reference counting still frees them. Counted, so overlapping analyses in threads nest.
    """
    with _gc_lock:
        if _gc_state["holders"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["holders"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["holders"] -= 1
            if _gc_state["holders"] == 0 and _gc_state["was_enabled"]:
                if 0 < _gc_state["freeze_at"] < gc.get_count()[0]:
                    gc.freeze()
                gc.enable()
