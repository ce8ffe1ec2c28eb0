"""Grouping failures: a normalised error message plus the top-ranked location.

Two failures share a group when their error text is the same once run-specific values are
masked (numbers, hex, uuids, IPs, paths, timestamps) and the ranking puts the same element
first. Pure functions.
"""

from __future__ import annotations

import hashlib
import re

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<ts>"),
    (
        re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
        "<uuid>",
    ),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[\\/][\w.@+-]+){2,}[\\/]?"), "<path>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?"), "<n>"),
)
_SPACE = re.compile(r"\s+")


def normalise_error(message: str) -> str:
    """The error text with values that differ between runs masked; the first line only."""
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    for pattern, mask in _MASKS:
        line = pattern.sub(mask, line)
    return _SPACE.sub(" ", line)[:500]


def signature(message: str, top: str | None) -> str:
    """A short stable id of (normalised error, top location)."""
    key = f"{normalise_error(message)}\x00{top or ''}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]
