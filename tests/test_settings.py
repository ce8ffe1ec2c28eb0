"""Settings: read from ``TCFL_*`` variables and ``.env`` with pydantic-settings' rules, checked by field."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.settings import Settings, SettingsError


def test_defaults_without_environment_or_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TCFL_DEFAULT_K", raising=False)
    settings = Settings(_env_file=None)
    assert (settings.default_k, settings.model_url, settings.worker_enabled) == (5, None, True)
    assert settings.database_url.startswith("sqlite:///") and settings.database_url.endswith("tcfl.db")


def test_environment_wins_over_env_file_and_keywords_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text('TCFL_DEFAULT_K=9\ntcfl_model_retries="7"\nTCFL_UNKNOWN=1\nOTHER=2\n')
    monkeypatch.setenv("tcfl_default_k", "4")  # names are case-insensitive
    monkeypatch.setenv("TCFL_WORKER_ENABLED", "off")
    settings = Settings(_env_file=env_file)
    assert (settings.default_k, settings.model_retries, settings.worker_enabled) == (4, 7, False)
    assert not hasattr(settings, "unknown")
    assert Settings(_env_file=env_file, default_k=2).default_k == 2


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TCFL_MAX_LOG_LINES", "many", "valid integer"),
        ("TCFL_MAX_LOG_LINES", "0", "greater than or equal to 1"),
        ("TCFL_MODEL_TIMEOUT_S", "0", "greater than 0"),
        ("TCFL_WORKER_ENABLED", "maybe", "valid boolean"),
        ("TCFL_TOP_K", "", "valid integer"),
    ],
)
def test_a_bad_value_names_its_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as exc:
        Settings(_env_file=None)
    error = exc.value.errors()[0]
    assert error["loc"] == (name.removeprefix("TCFL_").lower(),) and message in error["msg"]


def test_copy_and_construct_leave_the_original_alone() -> None:
    settings = Settings(_env_file=None, model="a")
    copied = settings.model_copy(update={"model": "b"})
    assert (settings.model, copied.model) == ("a", "b") and copied != settings
    assert Settings.model_construct().max_log_bytes == settings.max_log_bytes
    assert "secret" not in repr(Settings(_env_file=None, api_key="secret", service_api_keys="secret"))
