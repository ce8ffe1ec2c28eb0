"""Alembic migrations for every table on ``app.service.store.Base``; ``import_models`` loads them all."""

from __future__ import annotations

import importlib

# Modules that declare tables on Base; autogenerate and the drift test must see all of them.
MODEL_MODULES: tuple[str, ...] = (
    "app.service.store",
    "app.service.dashboard.feedback",
    "app.service.history_store",
    "app.service.ci_runs",
)


def import_models() -> None:
    for name in MODEL_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
