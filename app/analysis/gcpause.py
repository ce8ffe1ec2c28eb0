"""The cyclic garbage collector paused while a computation builds many small, acyclic records."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_state = {"holders": 0, "was_enabled": True}


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
                gc.enable()
