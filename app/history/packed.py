"""Estimated traces packed into one compressed blob per run (docs/design.md §8.1, at CI scale).

A trace is ``{path: {state letter: [line, ...]}}`` (letters E/N/D). Stored as JSON it costs a
few kilobytes per run, and a test's history page or a history-aware triage reads hundreds of
them; packed, each state's sorted line numbers become deltas in one unsigned 32-bit array,
behind a small JSON header naming the paths, letters and counts, all zlib-compressed. Decoding
is C-speed (``array`` + ``accumulate``) and the blob is a fraction of the JSON's size.

Only what :func:`packable` accepts is packed; anything else stays as JSON, so packing never
loses a stored trace.
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from collections.abc import Mapping, Sequence
from itertools import accumulate, islice
from operator import lt
from typing import Any

import numpy as np

FORMAT = 1
_MAX_LINE = 2**32 - 1
_LEVEL = 6


def packable(trace: Any) -> bool:
    """Whether ``trace`` round-trips exactly: paths to letters to distinct, sorted-able line numbers."""
    if not isinstance(trace, Mapping):
        return False
    for path, states in trace.items():
        if not isinstance(path, str) or not isinstance(states, Mapping):
            return False
        for letter, lines in states.items():
            if not isinstance(letter, str) or not isinstance(lines, Sequence) or isinstance(lines, str):
                return False
            if not _ascending(lines):
                return False
    return True


def _ascending(lines: Sequence[Any]) -> bool:
    """Plain ints (not bools), strictly ascending (unsorted or repeated: sorting on the way in would
    change the trace), within 0.._MAX_LINE; checked at C speed, a pass's trace holds every code line."""
    if not lines:
        return True
    if set(map(type, lines)) != {int}:
        return False
    if not all(map(lt, lines, islice(lines, 1, None))):
        return False
    return lines[0] >= 0 and lines[-1] <= _MAX_LINE


def pack_trace(trace: Mapping[str, Mapping[str, Sequence[int]]], *, checked: bool = False) -> bytes:
    """One blob for a trace that :func:`packable` accepts (``ValueError`` otherwise); ``checked``:
    the caller has just asked :func:`packable`."""
    if not checked and not packable(trace):
        raise ValueError("trace is not {path: {letter: [ascending line numbers]}}")
    header: list[list[Any]] = []
    lists: list[Sequence[int]] = []
    for path, states in trace.items():
        counts = []
        for letter, lines in states.items():
            counts.append([letter, len(lines)])
            lists.append(lines)
        header.append([path, counts])
    head = json.dumps([FORMAT, header], separators=(",", ":")).encode("utf-8")
    return zlib.compress(len(head).to_bytes(4, "little") + head + _deltas(lists), _LEVEL)


def _deltas(lists: Sequence[Sequence[int]]) -> bytes:
    """Each list's deltas (from 0, then from each line), all lists in one little-endian unsigned
    32-bit array: the subtraction done over one array, not number by number (a pass's trace
    holds every code line of its scripts, and a CI job records thousands of passes)."""
    if not any(lists):
        return b""
    numbers = array("I")
    for each in lists:  # a list in one call, not number by number (a pass holds thousands)
        if isinstance(each, list):
            numbers.fromlist(each)
        else:
            numbers.extend(each)
    lines = np.frombuffer(numbers, dtype=np.uint32)
    deltas = np.empty_like(lines)
    np.subtract(lines[1:], lines[:-1], out=deltas[1:])
    firsts = list(accumulate((len(x) for x in lists[:-1]), initial=0))
    starts = [at for at, x in zip(firsts, lists, strict=True) if len(x)]
    deltas[starts] = lines[starts]  # each list's first line: its delta from 0
    return deltas.astype("<u4", copy=False).tobytes()


def unpack_trace(blob: bytes) -> dict[str, dict[str, list[int]]]:
    """The trace :func:`pack_trace` packed, in its original order."""
    raw = zlib.decompress(blob)
    size = int.from_bytes(raw[:4], "little")
    version, header = json.loads(raw[4 : 4 + size])
    if version != FORMAT:
        raise ValueError(f"unknown packed trace format {version}")
    numbers = array("I")
    numbers.frombytes(raw[4 + size :])
    if sys.byteorder != "little":
        numbers.byteswap()
    out: dict[str, dict[str, list[int]]] = {}
    at = 0
    for path, counts in header:
        states: dict[str, list[int]] = {}
        for letter, count in counts:
            states[letter] = list(accumulate(numbers[at : at + count]))
            at += count
        out[path] = states
    return out
