"""All configuration, read once from the environment (prefix ``TCFL_``) or a ``.env`` file."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TCFL_", env_file=".env", extra="ignore")

    # storage
    database_url: str = Field(
        "sqlite:///./tcfl.db", description="SQLAlchemy URL; postgresql+psycopg://... for PostgreSQL"
    )

    # model server (OpenAI-compatible, vLLM in production)
    model_url: str | None = Field(None, description="Base URL ending in /v1; unset = heuristic ranker only")
    model: str | None = Field(None, description="Model name; discovered from /v1/models when unset")
    api_key: str | None = Field(None, description="Bearer token sent to the model server")
    model_timeout_s: float = Field(120.0, description="Per-request timeout for model calls")
    model_retries: int = Field(3, description="Retries on 429/5xx/connection errors, with backoff")
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

    # limits
    max_script_bytes: int = 2_000_000
    max_log_bytes: int = 50_000_000
    max_files_per_case: int = 50
    max_cases_per_batch: int = 5_000

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

    def extra_log_functions(self) -> list[str]:
        return [p.strip() for p in self.log_functions.split(",") if p.strip()]

    def service_keys(self) -> list[str]:
        return [k.strip() for k in (self.service_api_keys or "").split(",") if k.strip()]


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
