"""The submit form's parsing: pasted and uploaded scripts, the log, options, and where errors go."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from app.service.dashboard.forms import SubmitForm, Upload, parse_submit, validation_errors
from app.service.schemas import TriageRequest


def test_pasted_and_uploaded_scripts_become_the_request_body() -> None:
    fields = {
        "script_path_0": "tests/test_a.py",
        "script_content_0": "print('a')\n",
        "script_path_1": "",
        "script_content_1": "",
        "script_path_4": "",
        "log": "pasted log",
        "level": "line",
        "k": "7",
        "trace": "tmax",
        "ranker": "heuristic",
        "log_functions": "Log.log, self.*.info\nstep",
        "test_id": " job-17 ",
    }
    uploads = {
        "script_file_4": [Upload("helpers.py", b"def h():\n    pass\n")],
        "log_file": [Upload("run.log", "\ufeffuploaded log \u2713".encode())],
    }
    form, body = parse_submit(fields, uploads)
    assert not form.errors
    assert body == {
        "scripts": [
            {"path": "tests/test_a.py", "content": "print('a')\n"},
            {"path": "helpers.py", "content": "def h():\n    pass\n"},
        ],
        "log": "uploaded log \u2713",
        "level": "line",
        "k": 7,
        "trace": "tmax",
        "ranker": "heuristic",
        "log_functions": ["Log.log", "self.*.info", "step"],
        "test_id": "job-17",
    }
    assert form.body_slots == [0, 4]
    TriageRequest.model_validate(body)


def test_empty_form_names_every_missing_part() -> None:
    form, body = parse_submit({}, {})
    assert body is None
    assert set(form.errors) == {"script_content_0", "log"}
    assert len(form.scripts) == 3


def test_code_without_path_and_path_without_code_are_errors_on_their_fields() -> None:
    fields = {"script_content_0": "x = 1", "script_path_1": "b.py", "log": "x", "k": "ten"}
    form, body = parse_submit(fields, {})
    assert body is None
    assert "give its path" in form.errors["script_path_0"][0]
    assert "no code" in form.errors["script_content_1"][0]
    assert "whole number" in form.errors["k"][0]
    assert form.scripts[0] == ("", "x = 1")


def test_binary_uploads_are_refused_with_the_byte_offset() -> None:
    uploads = {"script_file_0": [Upload("a.py", b"ok\xff")], "log_file": [Upload("l.log", b"\xfe")]}
    form, body = parse_submit({"script_path_0": "a.py"}, uploads)
    assert body is None
    assert "not UTF-8" in form.errors["script_file_0"][0] and "byte 2" in form.errors["script_file_0"][0]
    assert "not UTF-8" in form.errors["log"][0]


def test_model_errors_land_next_to_the_right_slot() -> None:
    fields = {"script_path_2": "a\x00.py", "script_content_2": "x = 1\n", "log": "log", "trace": "T9"}
    form, body = parse_submit(fields, {})
    assert body is not None
    with pytest.raises(ValidationError) as exc:
        TriageRequest.model_validate(body)
    validation_errors(form, exc.value)
    assert "NUL" in form.errors["script_path_2"][0]
    assert "unknown trace variant" in form.errors["trace"][0]
    assert "" not in form.errors  # every message names its field


@given(st.dictionaries(st.text(max_size=20), st.text(max_size=50), max_size=12))
def test_any_fields_give_errors_or_a_body_never_an_exception(fields: dict[str, str]) -> None:
    form, body = parse_submit(fields, {})
    assert isinstance(form, SubmitForm)
    assert (body is None) == bool(form.errors)
    if body is not None:
        assert body["scripts"] and all(s["path"] for s in body["scripts"])
