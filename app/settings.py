"""All configuration, read once from the environment (prefix ``TCFL_``) or a ``.env`` file."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.analysis.limits import CostLimits


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TCFL_", env_file=".env", extra="ignore")

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

    # limits
    max_script_bytes: int = 2_000_000
    max_log_bytes: int = 50_000_000
    max_files_per_case: int = 50
    max_cases_per_batch: int = 5_000
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
    cfg_path_budget: int = Field(
        100_000, description="Algorithm 3 path-search steps per function before fallback"
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

    def service_keys(self) -> list[str]:
        return [k.strip() for k in (self.service_api_keys or "").split(",") if k.strip()]


def default_database_url() -> str:
    """SQLite in the platform's per-user data folder, so results do not land wherever a command ran."""
    from pathlib import Path

    from platformdirs import user_data_path

    return f"sqlite:///{Path(user_data_path('tcfl', appauthor=False)) / 'tcfl.db'}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
