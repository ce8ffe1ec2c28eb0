"""Alembic migrations for every table on ``app.store.store.Base``; ``import_models`` loads them all."""

from __future__ import annotations

import importlib

# Modules that declare tables on Base; autogenerate and the drift test must see all of them.
MODEL_MODULES: tuple[str, ...] = (
    "app.store.store",
    "app.service.dashboard.feedback",
    "app.store.history",
    "app.store.ingests",
    "app.store.launches",
    "app.store.labels",
)


def import_models() -> None:
    for name in MODEL_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
