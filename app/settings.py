"""All configuration, read once from the environment (prefix ``TCFL_``) or a ``.env`` file.

A plain class filled and checked by hand, not a pydantic(-settings) model: importing and
building those would be most of a CLI triage's cold start, for a flat record of strings and
numbers. The rules are pydantic-settings' ones: names
are case-insensitive, the environment wins over ``.env``, keyword arguments win over both,
unknown names are ignored, strings are converted to the field's type, and a bad value raises
``SettingsError`` (a ``ValueError``) naming the field.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from app.analysis.limits import CostLimits

ENV_PREFIX = "tcfl_"
ENV_FILE = ".env"
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


class SettingsError(ValueError):
    """A setting with a value of the wrong type or out of range; ``errors()`` as pydantic gives them."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message

    def errors(self) -> list[dict[str, Any]]:
        return [{"loc": (self.name,), "msg": self.message}]


@dataclass(frozen=True)
class _Field:
    default: Any = None
    default_factory: Callable[[], Any] | None = None
    gt: float | None = None
    ge: float | None = None
    description: str = ""


def Field(
    default: Any = None,
    *,
    default_factory: Callable[[], Any] | None = None,
    gt: float | None = None,
    ge: float | None = None,
    description: str = "",
) -> Any:
    return _Field(default, default_factory, gt, ge, description)


def _number(kind: type, name: str, value: Any) -> Any:
    what = "an integer" if kind is int else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SettingsError(name, f"Input should be a valid {'integer' if kind is int else 'number'}")
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            raise SettingsError(
                name, f"Input should be a valid {what.split()[-1]}, unable to parse string as {what}"
            ) from None
    if kind is int and isinstance(value, float):
        if not value.is_integer():
            raise SettingsError(name, "Input should be a valid integer, got a number with a fractional part")
        return int(value)
    return kind(value)


def _convert(name: str, kind: str, value: Any) -> Any:
    optional = kind.endswith(" | None")
    base = kind.removesuffix(" | None")
    if value is None:
        if optional:
            return None
        raise SettingsError(name, f"Input should be a valid {'string' if base == 'str' else base}")
    if base == "str":
        if not isinstance(value, str):
            raise SettingsError(name, "Input should be a valid string")
        return value
    if base == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if isinstance(value, str | int) else ""
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise SettingsError(name, "Input should be a valid boolean, unable to interpret input")
    return _number(int if base == "int" else float, name, value)


def _check(name: str, spec: _Field, value: Any) -> Any:
    if spec.gt is not None and value is not None and not value > spec.gt:
        raise SettingsError(name, f"Input should be greater than {spec.gt}")
    if spec.ge is not None and value is not None and not value >= spec.ge:
        raise SettingsError(name, f"Input should be greater than or equal to {spec.ge}")
    return value


class Settings:
    """Every ``TCFL_*`` setting; build with ``Settings()`` (environment) or ``get_settings()`` (cached)."""

    model_fields: dict[str, _Field]  # name -> declaration, filled below
    _kinds: dict[str, str]

    def __init__(self, _env_file: str | Path | None = ENV_FILE, **values: Any) -> None:
        given = {**environment(_env_file), **values}
        for name, spec in self.model_fields.items():
            if name in given:
                value = _check(name, spec, _convert(name, self._kinds[name], given[name]))
            else:
                value = spec.default_factory() if spec.default_factory is not None else spec.default
            object.__setattr__(self, name, value)

    @classmethod
    def model_construct(cls, **values: Any) -> Settings:
        """Defaults (and ``values``) without reading the environment or checking anything."""
        out = cls.__new__(cls)
        for name, spec in cls.model_fields.items():
            default = spec.default_factory() if spec.default_factory is not None else spec.default
            object.__setattr__(out, name, values.get(name, default))
        return out

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Settings:
        """A copy with ``update`` applied, unchecked (flags were checked where they were parsed)."""
        out = copy.copy(self)
        for name, value in (update or {}).items():
            object.__setattr__(out, name, value)
        return out

    def model_dump(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.model_dump().items() if "key" not in k)
        return f"Settings({shown})"

    # storage
    database_url: str = Field(
        default_factory=lambda: default_database_url(),
        description="SQLAlchemy URL; postgresql+psycopg://... for PostgreSQL. Default: a SQLite file in "
        "the per-user data folder ($XDG_DATA_HOME/tcfl/tcfl.db on Linux), never the working folder",
    )

    # model server (OpenAI-compatible, vLLM in production)
    model_url: str | None = Field(None, description="Base URL ending in /v1; unset = heuristic ranker only")
    model: str | None = Field(None, description="Model name; discovered from /v1/models when unset")
    api_key: str | None = Field(None, description="Bearer token sent to the model server")
    model_timeout_s: float = Field(
        120.0, gt=0, description="Overall deadline of one model call: connect, read and retries included"
    )
    model_retries: int = Field(3, description="Retries on 429/5xx/connection errors, within the deadline")
    model_breaker_failures: int = Field(
        3, ge=1, description="Failed model calls in a row that stop calls for the cool-down"
    )
    model_breaker_cooldown_s: float = Field(
        30.0, ge=0, description="Seconds the model is not called after the circuit opens"
    )
    model_concurrency: int = Field(8, description="Model requests in flight at once, per process")
    max_output_tokens: int = Field(2048, description="max_tokens sent to the model")
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int | None = None
    output_format: str = Field(
        "json_schema", description="json_schema (structured output) or paper (free-form)"
    )

    # service
    service_api_keys: str | None = Field(
        None, description="Comma-separated API keys; when set every route but /healthz requires X-API-Key"
    )
    allowed_hosts: str = Field(
        "",
        description="Without API keys, the Host names the service answers besides localhost and IP"
        " addresses (a DNS-rebinding guard): comma-separated, '.example.com' for its subdomains too,"
        " '*' for any",
    )
    batch_concurrency: int = Field(4, description="Batch items processed at once per worker process")
    batch_in_flight: int = Field(
        64,
        description="tcfl batch with a model server: requests kept in flight for the server's continuous"
        " batching (the most; it backs off on 429/503 and rising latency)",
    )
    worker_enabled: bool = Field(True, description="Run the batch worker inside `tcfl serve`")
    triage_lease_s: float = Field(
        40.0, gt=0, description="A running triage not renewed this long is marked failed (its server died)"
    )
    analysis_workers: int = Field(
        0, ge=0, description="Analysis worker processes of `tcfl serve` (0 = one per CPU)"
    )
    analysis_cpu_s: float = Field(60.0, gt=0, description="CPU seconds one analysis may use")
    analysis_memory_bytes: int = Field(
        2 * 1024**3, ge=0, description="Memory ceiling of one analysis worker (0 = none)"
    )
    parse_cache_chars: int = Field(
        1_000_000,
        ge=0,
        description="Script text whose parse each analysis worker keeps for the next failure of the same"
        " scripts (about 100 bytes of memory per character; 0 = keep none)",
    )

    # limits
    max_script_bytes: int = 2_000_000
    max_log_bytes: int = 50_000_000
    max_files_per_case: int = 50
    max_cases_per_batch: int = 5_000
    max_unpacked_bytes: int = Field(
        300_000_000, ge=1, description="Most bytes an uploaded or --root archive may unpack to, in all"
    )
    # uploads that record runs (POST /v1/ingest, POST /v1/runs): turns, per server process
    max_ingests_in_flight: int = Field(2, ge=1, description="Uploads read, analysed and written at once")
    max_ingests_per_client: int = Field(
        2, ge=1, description="Uploads of one client (API key, else address) run at once; more wait, then 429"
    )
    max_ingests_queued: int = Field(64, ge=1, description="Uploads waiting for their turn (503 above it)")
    ingest_async_bytes: int = Field(
        2_000_000,
        ge=0,
        description="A /v1/ingest results file past this is answered 202 with a status URL (0 = never)",
    )
    # limits in what the analysis costs (app.analysis.limits), checked before it starts
    max_script_lines: int = Field(200_000, ge=1, description="Lines of all scripts of a case together")
    max_log_lines: int = Field(2_000_000, ge=1, description="Lines of a case's log")
    max_nesting_depth: int = Field(100, ge=1, description="Nested blocks (if/for/while/try/with/def/class)")
    max_syntax_depth: int = Field(400, ge=1, description="Any syntax nesting: brackets, calls, operators")
    max_statements_per_function: int = Field(50_000, ge=1, description="Statements in one function")
    max_branches_per_function: int = Field(
        5_000, ge=1, description="if/elif/for/while/except/case per function"
    )

    # analysis defaults
    default_level: str = "block"
    default_k: int = 5
    default_trace: str = "tplus"
    log_functions: str = Field("", description="Comma-separated extra log-function patterns, e.g. Log.log")
    log_format: str | None = Field(
        None, description="Log prefix format: a known name or a regex with (?P<msg>...); unset = detect"
    )
    ranker_model: str | None = Field(
        None, description="The built-in ranker's model file (tcfl learn writes one); unset = the shipped one"
    )
    cfg_path_budget: int = Field(
        100_000, description="Algorithm 3 path-search steps per function before fallback"
    )
    # labels of known issues (dashboard and POST /v1/labels)
    defect_types: str = Field(
        "product bug,automation bug,system issue,no defect",
        description="Comma-separated defect types a failure or a signature group can be labelled with",
    )

    def cost_limits(self) -> CostLimits:
        return CostLimits(
            max_script_lines=self.max_script_lines,
            max_log_lines=self.max_log_lines,
            max_nesting_depth=self.max_nesting_depth,
            max_syntax_depth=self.max_syntax_depth,
            max_statements_per_function=self.max_statements_per_function,
            max_branches_per_function=self.max_branches_per_function,
        )

    def extra_log_functions(self) -> list[str]:
        return [p.strip() for p in self.log_functions.split(",") if p.strip()]

    def defect_type_list(self) -> list[str]:
        return list(dict.fromkeys(t.strip() for t in self.defect_types.split(",") if t.strip()))

    def service_keys(self) -> list[str]:
        return [k.strip() for k in (self.service_api_keys or "").split(",") if k.strip()]

    def extra_hosts(self) -> list[str]:
        return [h.strip().lower() for h in self.allowed_hosts.split(",") if h.strip()]


def default_database_url() -> str:
    """SQLite in the platform's per-user data folder, so results do not land wherever a command ran."""
    from pathlib import Path

    from platformdirs import user_data_path

    return f"sqlite:///{Path(user_data_path('tcfl', appauthor=False)) / 'tcfl.db'}"


def _declare() -> None:
    """Collect the field declarations from the class body: name -> (declaration, type text)."""
    fields: dict[str, _Field] = {}
    kinds: dict[str, str] = {}
    for name, kind in Settings.__annotations__.items():
        if name.startswith("_") or name == "model_fields":
            continue
        declared = Settings.__dict__[name]
        fields[name] = declared if isinstance(declared, _Field) else _Field(declared)
        kinds[name] = kind
        delattr(Settings, name)
    Settings.model_fields = fields
    Settings._kinds = kinds


_declare()


def environment(env_file: str | Path | None = ENV_FILE) -> dict[str, str]:
    """The ``TCFL_*`` values of ``env_file`` (when it exists) overridden by the process environment."""
    names = Settings.model_fields
    found: dict[str, str] = {}
    sources: list[dict[str, str | None]] = []
    if env_file is not None and Path(env_file).is_file():
        from dotenv import dotenv_values  # only when there is a file to read

        sources.append(dict(dotenv_values(env_file)))
    sources.append(dict(os.environ))
    for source in sources:
        for key, value in source.items():
            name = key.lower()
            if value is not None and name.startswith(ENV_PREFIX) and name[len(ENV_PREFIX) :] in names:
                found[name[len(ENV_PREFIX) :]] = value
    return found


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
