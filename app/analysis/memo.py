"""What is derived from one object alone, kept while that object lives (pure, no I/O).

A CI job triages and records thousands of runs of the same few parsed programs: whatever a
computation reads of a program only (its statements' lines, its functions' headers) is worth
deriving once per program rather than once per run.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def kept_while(memo: dict[int, T], owner: object, build: Callable[[], T]) -> T:
    """``build()`` once per live ``owner``, kept in ``memo`` (by the owner's id) until the owner
    is collected; the owner must be weak-referenceable."""
    key = id(owner)
    found = memo.get(key)
    if found is None:
        found = memo[key] = build()
        weakref.finalize(owner, memo.pop, key, None)
    return found
