"""The one options record and its resolver: defaults < settings < the caller's values."""

from __future__ import annotations

import pytest

from app.localize.result import TriageOptions as ReExported
from app.options import TriageOptions, resolve_options
from app.settings import Settings
from app.triage import check_options


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_defaults_without_settings() -> None:
    assert resolve_options() == TriageOptions()
    assert ReExported is TriageOptions


def test_settings_override_defaults_and_the_caller_overrides_settings() -> None:
    configured = settings(default_level="line", default_k=7, default_trace="tmid", output_format="paper")
    opts = resolve_options(configured)
    assert (opts.level, opts.k, opts.trace, opts.output_format) == ("line", 7, "CSR(T1_dbt_exe&T2)", "paper")
    opts = resolve_options(configured, level="function", k=2, trace="t0", output_format="json_schema")
    assert (opts.level, opts.k, opts.trace, opts.output_format) == ("function", 2, "T0", "json_schema")


def test_log_functions_add_up_without_repeats() -> None:
    configured = settings(log_functions="Log.log, self.step")
    opts = resolve_options(configured, log_functions=["self.step", "report"])
    assert opts.log_functions == ("self.step", "report", "Log.log")


def test_the_log_format_comes_from_the_caller_else_the_settings() -> None:
    configured = settings(log_format="avocado")
    assert resolve_options(configured).log_format == "avocado"
    assert resolve_options(configured, log_format="python").log_format == "python"
    assert resolve_options(settings()).log_format is None


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"level": "file"}, "level"),
        ({"k": 0}, "k must be"),
        ({"trace": "T9"}, "unknown trace variant"),
        ({"ranker": "oracle"}, "ranker"),
        ({"output_format": "yaml"}, "output_format"),
        ({"log_format": "no group here"}, "prefix_format"),
    ],
)
def test_bad_values_are_named(given: dict[str, object], message: str) -> None:
    # the record's own rules at resolution, the registries' names (rankers, formats) by check_options
    with pytest.raises(ValueError, match=message):
        check_options(resolve_options(settings(), **given))  # type: ignore[arg-type]


def test_a_bad_setting_is_caught_like_a_bad_flag() -> None:
    with pytest.raises(ValueError, match="level"):
        resolve_options(settings(default_level="everything"))


def test_stored_options_round_trip_whole() -> None:
    opts = resolve_options(settings(), two_phase=True, line_to_block=True, log_functions=["Log.log"])
    data = opts.to_dict()
    assert data["two_phase"] is True and data["line_to_block"] is True
    assert data["log_functions"] == ["Log.log"]
    assert TriageOptions.from_dict(data) == opts


def test_options_stored_by_an_older_version_take_defaults() -> None:
    old = {"level": "line", "k": 3, "trace": "tplus", "ranker": "auto", "log_functions": ["Log.log"]}
    opts = TriageOptions.from_dict({**old, "unknown_later_field": 1})
    assert opts.level == "line" and opts.two_phase is False and opts.line_to_block is False
    assert opts.log_functions == ("Log.log",)
