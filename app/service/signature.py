"""The list page's failure signature: DESIGN 8.3's err_sig refined by the top-ranked location.

Two failures group together when their exception type and masked message agree (the history's
``err_sig``, numbers, ids, paths and timestamps masked) and their top-ranked element is the same
code (``loc_sig``: its content, not its line numbers, so edits elsewhere keep the group). The
result's JSON has no frame text, so the innermost frame does not take part here. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.history.signatures import err_sig, loc_sig, mask, split_exception


def normalise_error(message: str | None) -> str:
    """The exception type and its message with run-specific values masked."""
    exc, text = split_exception(message or "")
    return f"{exc}: {mask(text)}" if exc else mask(text)


def location_key(top: Mapping[str, Any] | None) -> str:
    """The top-ranked element as path + its code (line numbers shift between script versions)."""
    if not top:
        return ""
    code = top.get("code")
    body = " ".join(str(code).split()) if code else f"{top.get('start_line')}-{top.get('end_line')}"
    return f"{top.get('path', '')}\n{body}"


def signature(error_message: str | None, top: Mapping[str, Any] | None) -> str:
    """A 40-hex-digit key shared by failures with the same masked error and top location."""
    return loc_sig(err_sig(error_message or "", None, None), location_key(top))
