"""JSON schemas for structured model output: a ranking can only name IDs that exist.

The schema is sent as ``response_format`` so the server's grammar backend constrains decoding;
out-of-range and malformed answers then cannot occur. ``uniqueItems`` is deliberately absent:
vLLM's grammar backends (xgrammar, guidance) reject it with HTTP 400, so duplicates are removed
after the answer arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

RESPONSE_KEYS: dict[str, str] = {
    "function": "faulty_functions",
    "block": "faulty_blocks",
    "line": "faulty_lines",
}


def ranking_schema(level: str, ids: Sequence[str], k: int) -> dict[str, Any]:
    """Schema for an object holding exactly ``min(k, len(ids))`` IDs drawn from ``ids``, in rank order."""
    if level not in RESPONSE_KEYS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(RESPONSE_KEYS)}")
    if isinstance(ids, str):
        raise ValueError("ids must be a sequence of IDs, not a single string")
    if not ids:
        raise ValueError("ids must not be empty: there is nothing to rank")
    if any(not isinstance(i, str) for i in ids):
        raise ValueError("every ID must be a string")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    enum = list(dict.fromkeys(ids))
    n = min(k, len(enum))
    key = RESPONSE_KEYS[level]
    return {
        "type": "object",
        "properties": {
            key: {
                "type": "array",
                "items": {"type": "string", "enum": enum},
                "minItems": n,
                "maxItems": n,
            }
        },
        "required": [key],
        "additionalProperties": False,
    }
