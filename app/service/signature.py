"""Failure signatures: the same error at the same top-ranked place, whatever the run's details.

Two failures group together when their error messages agree once the parts that change from
run to run (numbers, addresses, ids, paths, timestamps, quoted values) are masked, and the
top-ranked element is the same code. Pure; the store keeps the signature beside each result.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

MAX_MESSAGE_CHARS = 2000
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE),
        "<uuid>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.-]*[/\\])+[\w.-]+"), "<path>"),
    (re.compile(r"\b[0-9a-fA-F]{12,}\b"), "<hex>"),
    (re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\""), "<str>"),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>"),
)


def normalise_error(message: str | None) -> str:
    """The error message with run-specific values masked and whitespace collapsed."""
    text = (message or "").strip()[:MAX_MESSAGE_CHARS]
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return " ".join(text.split())


def location_key(top: Mapping[str, Any] | None) -> str:
    """The top-ranked element as path + its code (line numbers shift between script versions)."""
    if not top:
        return ""
    code = top.get("code")
    body = " ".join(str(code).split()) if code else f"{top.get('start_line')}-{top.get('end_line')}"
    return f"{top.get('path', '')}\n{body}"


def signature(error_message: str | None, top: Mapping[str, Any] | None) -> str:
    """A 40-hex-digit key shared by failures with the same normalised error and top location."""
    key = normalise_error(error_message) + "\n\x00" + location_key(top)
    return hashlib.sha1(key.encode("utf-8"), usedforsecurity=False).hexdigest()
