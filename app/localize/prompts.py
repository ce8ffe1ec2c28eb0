"""The paper's Figure 4 prompt, filled for one rendered trace, and a tolerant reader of answers.

Templates live in the repository's top-level ``prompts/`` directory (one file per level) so they
can be read and edited as text. Each file has a ``[system]`` part (the fixed task description)
and a ``[user]`` part whose fixed instructions come before the error message and the code: the
varying text is last, so an OpenAI-compatible server's prefix cache is reused across requests.
Placeholders are substituted in one pass, so braces inside code or messages are never expanded.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.analysis.logparse import LogMessages
from app.analysis.model import Analysis, Frame, ParsedLog
from app.analysis.render import RenderedCode
from app.localize.schema import RESPONSE_KEYS

OUTPUT_FORMATS: tuple[str, ...] = ("json_schema", "paper")
PROMPT_STYLES: tuple[str, ...] = ("full", "paper")
"""``paper``: {err_msg} is the error message alone (Figure 4 exactly); ``full``: the failure as the log
tells it (the error message, the traceback frames in the scripts, a window of the log before it)."""
DEFAULT_BUDGET = 400  # tokens for the failure context beyond the error message itself
CHARS_PER_TOKEN = 4  # a tokenizer-free estimate that holds for English and code with BPE vocabularies
_MESSAGE_CHARS = 300  # one log message is cut to this many characters in the window
PLACEHOLDERS: frozenset[str] = frozenset(
    {
        "programming_language",
        "element",
        "k",
        "err_msg",
        "test_code",
        "ID",
        "max_element_id",
        "output_template",
    }
)
PROMPTS_DIR = Path(__file__).resolve().parents[2] / "prompts"

# Figure 5 of the paper; the JSON-schema variant of the line level asks for IDs only because
# the schema's enum already guarantees each ID names a real line.
OUTPUT_TEMPLATES: dict[tuple[str, str], str] = {
    ("function", "paper"): '{"faulty_functions": ["foo", "bar", ...]}',
    ("block", "paper"): '{"faulty_blocks": ["BLOCK 10", "BLOCK 7", ...]}',
    ("line", "paper"): '10: print("This line is faulty!")\n5: print("This line is faulty too!")\n...',
    ("function", "json_schema"): '{"faulty_functions": ["foo", "bar", ...]}',
    ("block", "json_schema"): '{"faulty_blocks": ["BLOCK 10", "BLOCK 7", ...]}',
    ("line", "json_schema"): '{"faulty_lines": ["10", "5", ...]}',
}
ID_WORDS: dict[str, str] = {"function": "name", "block": "ID", "line": "line number"}
_PLACEHOLDER = re.compile(r"\{([A-Za-z_]+)\}")


@dataclass(frozen=True)
class PromptTemplate:
    system: str
    user: str


@dataclass(frozen=True)
class RawAnswer:
    """One ranked item as the model wrote it, before any validation."""

    id: str
    content: str | None = None  # the line's text, line level in the paper's format only


def parse_template(text: str, name: str = "template") -> PromptTemplate:
    """Split a template file into its system and user parts and check its placeholders."""
    match = re.fullmatch(r"\s*\[system\]\n(.*?)\n\[user\]\n(.*)", text, flags=re.DOTALL)
    if match is None:
        raise ValueError(f"{name}: expected a '[system]' part followed by a '[user]' part")
    unknown = {m.group(1) for m in _PLACEHOLDER.finditer(text)} - PLACEHOLDERS
    if unknown:
        raise ValueError(f"{name}: unknown placeholders {sorted(unknown)}")
    return PromptTemplate(system=match.group(1).strip(), user=match.group(2).strip())


@lru_cache(maxsize=4)
def load_templates(directory: Path = PROMPTS_DIR) -> dict[str, PromptTemplate]:
    """Read ``function.txt``, ``block.txt`` and ``line.txt``; shipped resources, read once."""
    templates: dict[str, PromptTemplate] = {}
    for level in RESPONSE_KEYS:
        path = directory / f"{level}.txt"
        if not path.is_file():
            raise FileNotFoundError(
                f"prompt template {path} is missing; tcfl reads its prompts from the repository's "
                "top-level prompts/ directory"
            )
        templates[level] = parse_template(path.read_text(encoding="utf-8"), name=str(path))
    return templates


def failure_context(
    log: ParsedLog, frames: Sequence[Frame], *, style: str = "full", budget: int = DEFAULT_BUDGET
) -> str:
    """The text for ``{err_msg}``: the error message, then (style ``full``) what led to it.

    The traceback frames that point into the scripts (outermost first, with the code the log
    printed), then a window of the log's messages around the failure: the messages just before
    it are the likeliest to explain it, so the window is filled from the failure backwards (most
    recent first) until the token ``budget`` is spent, with a quarter of it for what the log says
    after the failure (teardown, cleanups); it is printed in log order. The error message itself
    is never cut.
    """
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(PROMPT_STYLES)}")
    error = log.error_message.strip() or "(no error message found in the log)"
    if style == "paper" or budget <= 0:
        return error
    left = budget * CHARS_PER_TOKEN
    parts = [error]
    if frames:
        rows = []
        for f in frames:
            row = f"  {f.path}:{f.line}" + (f" in {f.function}" if f.function else "")
            if f.code:
                row += f": {f.code.strip()[:_MESSAGE_CHARS]}"
            rows.append(row)
        block = "Traceback frames in the test scripts (outermost first):\n" + "\n".join(rows)
        if len(block) <= left:
            parts.append(block)
            left -= len(block)
    window = _log_window(log, frames, left)
    if window:
        parts.append(window)
    return "\n\n".join(parts)


def failure_text(analysis: Analysis, options: Any) -> str:
    """``{err_msg}`` for one analysis under a triage's options (``prompt_style``, ``prompt_budget``)."""
    return failure_context(
        analysis.log,
        analysis.error_frames,
        style=getattr(options, "prompt_style", "full"),
        budget=getattr(options, "prompt_budget", DEFAULT_BUDGET),
    )


def _failure_line(log: ParsedLog, frames: Sequence[Frame]) -> int:
    """The log line where the failure shows: its last traceback's first frame, else the error text."""
    last = max((f.traceback for f in log.frames), default=None)
    if last is not None:
        return min(f.log_line for f in log.frames if f.traceback == last)
    first = log.error_message.strip().split("\n", 1)[0]
    if first:
        for m in reversed(log.messages):
            if first in m.text or m.text in first:
                return m.line
    return max((m.end_line for m in log.messages), default=0) + 1


def _log_window(log: ParsedLog, frames: Sequence[Frame], chars: int) -> str:
    """The messages nearest the failure line, within ``chars``; found by bisection, not a scan."""
    messages = log.messages
    if chars <= 0 or not messages:
        return ""
    fail = _failure_line(log, frames)
    error_lines = set(log.error_message.strip().split("\n"))
    if isinstance(messages, LogMessages):  # in log order: lines and end lines ascend
        lines, text = messages.lines(), messages.text
        before: Sequence[int] = range(bisect_left(messages.end_lines(), fail))
        after: Sequence[int] = range(bisect_right(lines, fail), len(messages))
    else:
        lines = [m.line for m in messages]
        text = [m.text for m in messages].__getitem__
        before = [k for k, m in enumerate(messages) if m.end_line < fail]
        after = [k for k, m in enumerate(messages) if m.line > fail]
    any_after = any(text(k) not in error_lines for k in after)
    header = "Log messages around the failure (log line: message):"
    chars -= len(header) + 1
    after_share = chars // 4 if any_after else 0
    chosen: list[tuple[int, str]] = []
    spent = 0
    for k in reversed(before):  # most recent first
        if text(k) in error_lines:
            continue
        row = _row(lines[k], text(k))
        if spent + len(row) + 1 > chars - after_share:
            break
        chosen.append((lines[k], row))
        spent += len(row) + 1
    marker = f"  {fail}: --- the failure ---"
    if any_after and spent + len(marker) + 1 <= chars:
        chosen.append((fail, marker))
        spent += len(marker) + 1
        for k in after:
            if text(k) in error_lines:
                continue
            row = _row(lines[k], text(k))
            if spent + len(row) + 1 > chars:
                break
            chosen.append((lines[k], row))
            spent += len(row) + 1
    if not chosen:
        return ""
    chosen.sort(key=lambda item: item[0])
    return header + "\n" + "\n".join(row for _, row in chosen)


def _row(line: int, text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) > _MESSAGE_CHARS:
        flat = flat[: _MESSAGE_CHARS - 3] + "..."
    return f"  {line}: {flat}"


def build_messages(
    rendered: RenderedCode,
    error_message: str,
    k: int,
    *,
    output_format: str = "json_schema",
    templates: dict[str, PromptTemplate] | None = None,
) -> list[dict[str, str]]:
    """System and user chat messages asking for the ``k`` most suspicious elements of ``rendered``."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(
            f"unknown output format {output_format!r}; expected one of {', '.join(OUTPUT_FORMATS)}"
        )
    template = (templates or load_templates())[rendered.level]
    values = {
        "programming_language": "Python",
        "element": rendered.level,
        "k": str(k),
        "ID": ID_WORDS[rendered.level],
        "max_element_id": str(
            rendered.max_element_id if rendered.max_element_id is not None else len(rendered.elements)
        ),
        "output_template": OUTPUT_TEMPLATES[(rendered.level, output_format)],
        "err_msg": error_message.strip() or "(no error message found in the log)",
        "test_code": rendered.text,
    }

    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)

    return [
        {"role": "system", "content": fill(template.system)},
        {"role": "user", "content": fill(template.user)},
    ]


def parse_answer(text: str, level: str, *, output_format: str) -> list[RawAnswer]:
    """Read the ranked IDs out of a model answer, tolerating fences, prose and sloppy JSON.

    Function and block answers (and line answers in ``json_schema`` mode) are JSON objects with
    the level's key; when no JSON can be recovered the IDs are picked out of the text. Line
    answers in ``paper`` mode are ``N: content`` lines; a JSON list of IDs is accepted too.
    """
    if level not in RESPONSE_KEYS:
        raise ValueError(f"unknown level {level!r}")
    body = _strip_fences(text)
    if level == "line" and output_format == "paper":
        answers = _paper_lines(body)
        if answers:
            return answers
    items = _json_items(body, RESPONSE_KEYS[level])
    if items is not None:
        return [RawAnswer(id=_normalize_id(item, level)) for item in items if _normalize_id(item, level)]
    if level == "line":
        return _paper_lines(body)
    if level == "block":
        return [RawAnswer(id=f"BLOCK {n}") for n in re.findall(r"\bBLOCK\s*(\d+)", body, flags=re.IGNORECASE)]
    return [RawAnswer(id=name) for name in re.findall(r"[\"'`]([A-Za-z_][\w.]*)[\"'`]", body)]


def _strip_fences(text: str) -> str:
    fenced = re.findall(r"```[\w-]*\n?(.*?)```", text, flags=re.DOTALL)
    return "\n".join(fenced) if fenced else text


def _json_items(text: str, key: str) -> list[object] | None:
    """The list under ``key`` in the first JSON object that has it, or a bare JSON list."""
    for candidate in _json_candidates(text):
        for attempt in (candidate, re.sub(r",\s*([\]}])", r"\1", candidate)):
            try:
                value = json.loads(attempt)
            except ValueError:
                continue
            if isinstance(value, dict):
                found = value.get(key)
                if found is None and len(value) == 1:
                    found = next(iter(value.values()))
                if isinstance(found, list):
                    return found
            elif isinstance(value, list):
                return value
    return None


def _json_candidates(text: str) -> list[str]:
    """Balanced ``{...}`` spans, then ``[...]`` spans, each in text order."""
    spans: list[str] = []
    for opener, closer in (("{", "}"), ("[", "]")):
        start = text.find(opener)
        while start != -1:
            end = _balanced_end(text, start, opener, closer)
            if end is None:
                start = text.find(opener, start + 1)
            else:
                spans.append(text[start : end + 1])
                start = text.find(opener, end + 1)
    return spans


def _balanced_end(text: str, start: int, opener: str, closer: str) -> int | None:
    depth, in_string, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    return None


def _normalize_id(item: object, level: str) -> str:
    if isinstance(item, bool):
        return ""
    if isinstance(item, dict):
        item = next(
            (v for k, v in item.items() if k.lower() in ("id", "name", "block", "line", "function")), ""
        )
    text = str(item).strip()
    if level == "block":
        match = re.fullmatch(r"(?:BLOCK\s*)?(\d+)", text, flags=re.IGNORECASE)
        return f"BLOCK {int(match.group(1))}" if match else text
    if level == "line":
        match = re.match(r"\s*(?:line\s*)?(\d+)", text, flags=re.IGNORECASE)
        return str(int(match.group(1))) if match else text
    return text


_PAPER_LINE = re.compile(r"^\s*(?:[-*]\s*)?(?:line\s*)?(\d+)\s*:\s?(.*)$", flags=re.IGNORECASE)


def _paper_lines(text: str) -> list[RawAnswer]:
    answers = []
    for raw in text.splitlines():
        match = _PAPER_LINE.match(raw)
        if match:
            answers.append(RawAnswer(id=str(int(match.group(1))), content=match.group(2)))
    return answers
