"""The submit form: its fields in, a POST /v1/triage body (or the errors to show) out.

Pure: the route reads the multipart body and hands over plain strings and uploaded bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

SCRIPT_SLOTS = 3  # script fieldsets rendered without JavaScript; the page can add more
MAX_SCRIPT_SLOTS = 50
FIELDS = ("test_id", "log", "level", "k", "trace", "ranker", "log_functions")


@dataclass(frozen=True)
class Upload:
    """A file field of the form: its name as the browser sent it and its bytes."""

    filename: str
    data: bytes


@dataclass
class SubmitForm:
    """What the form holds (to render it again) and what is wrong with it."""

    values: dict[str, str] = field(default_factory=dict)
    scripts: list[tuple[str, str]] = field(default_factory=list)  # (path, content) per slot
    errors: dict[str, list[str]] = field(default_factory=dict)
    body_slots: list[int] = field(default_factory=list)  # form slot of each script in the body

    def error(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)


_LABELS = {
    "test_id": "Test id",
    "log": "Log",
    "level": "Level",
    "k": "k",
    "trace": "Trace variant",
    "ranker": "Ranker",
    "log_functions": "Log-function patterns",
}


def field_label(name: str) -> str:
    """How the error summary names a field."""
    slot = _slot(name)
    if slot is not None:
        part = {"script_path_": "path", "script_content_": "code", "script_file_": "upload"}
        kind = next(v for k, v in part.items() if name.startswith(k))
        return f"Script {slot + 1} {kind}"
    return _LABELS.get(name, name)


def _decode(upload: Upload, what: str, form: SubmitForm, name: str) -> str | None:
    try:
        return upload.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        form.error(name, f"{what} ({upload.filename}) is not UTF-8 text (byte {exc.start})")
        return None


def parse_submit(
    fields: Mapping[str, str], uploads: Mapping[str, Sequence[Upload]]
) -> tuple[SubmitForm, dict[str, Any] | None]:
    """The form as submitted, and the request body when the form itself is complete."""
    form = SubmitForm(values={name: fields.get(name, "") for name in FIELDS})
    slots = sorted(
        {int(name.rsplit("_", 1)[1]) for name in [*fields, *uploads] if _slot(name) is not None}
        | set(range(SCRIPT_SLOTS))
    )
    scripts: list[dict[str, str]] = []
    for slot in slots[:MAX_SCRIPT_SLOTS]:
        path = fields.get(f"script_path_{slot}", "").strip()
        content = fields.get(f"script_content_{slot}", "")
        files = [u for u in uploads.get(f"script_file_{slot}", ()) if u.filename or u.data]
        if files:
            decoded = _decode(files[0], "the uploaded script", form, f"script_file_{slot}")
            content = decoded if decoded is not None else content
            path = path or files[0].filename
        form.scripts.append((path, content))
        if not content.strip() and not files:
            if path:
                form.error(f"script_content_{slot}", f"script {slot + 1} has a path but no code")
            continue
        if not path:
            form.error(f"script_path_{slot}", f"script {slot + 1}: give its path as the failing run saw it")
            continue
        scripts.append({"path": path, "content": content})
        form.body_slots.append(slot)
    if not scripts and not any(name.startswith("script_") for name in form.errors):
        form.error("script_content_0", "paste or upload at least one test script")

    log = fields.get("log", "")
    log_files = [u for u in uploads.get("log_file", ()) if u.filename or u.data]
    if log_files:
        decoded = _decode(log_files[0], "the uploaded log", form, "log")
        if decoded is not None:
            log = decoded
            form.values["log"] = decoded
    if not log.strip() and "log" not in form.errors:
        form.error("log", "paste or upload the failure log")

    body: dict[str, Any] = {"scripts": scripts, "log": log}
    for name in ("level", "trace", "ranker"):
        value = fields.get(name, "").strip()
        if value:
            body[name] = value
    k = fields.get("k", "").strip()
    if k:
        if k.isdigit() and len(k) < 6:
            body["k"] = int(k)
        else:
            form.error("k", "k must be a whole number from 1 to 1000")
    patterns = [
        p.strip() for p in fields.get("log_functions", "").replace(",", "\n").splitlines() if p.strip()
    ]
    body["log_functions"] = patterns
    test_id = fields.get("test_id", "").strip()
    if test_id:
        body["test_id"] = test_id
    return form, (None if form.errors else body)


def _slot(name: str) -> int | None:
    for prefix in ("script_path_", "script_content_", "script_file_"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return int(name[len(prefix) :])
    return None


def validation_errors(form: SubmitForm, exc: ValidationError) -> None:
    """Put the request model's complaints next to the form fields they are about."""
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = [str(part) for part in error.get("loc", ())]
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if loc[:1] == ["scripts"] and len(loc) >= 3 and loc[1].isdigit():
            name = "script_path" if loc[2] == "path" else "script_content"
            index = int(loc[1])
            slot = form.body_slots[index] if index < len(form.body_slots) else index
            form.error(f"{name}_{slot}", message)
        elif loc and loc[0] in FIELDS:
            form.error(loc[0], message)
        else:
            form.error("", f"{'.'.join(loc)}: {message}" if loc else message)
