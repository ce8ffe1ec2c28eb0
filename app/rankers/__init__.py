"""Rankers: one interface, registered by name; ``--ranker NAME`` picks one, ``auto`` keeps today's rule.

A ranker module is imported only when its ranker is used, so naming the registered rankers (the
CLI's choices, option validation) costs nothing. The history-based rankers register here too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.rankers.base import Ranker

# name -> "module:factory"; a factory takes the model client (or None) and returns a Ranker
_REGISTRY: dict[str, str] = {
    "llm": "app.rankers.llm:LlmRanker",
    "heuristic": "app.rankers.heuristic:HeuristicRanker",
    "handset": "app.rankers.heuristic:HandsetRanker",
    "stacktrace": "app.rankers.stacktrace:StacktraceRanker",
    "history": "app.rankers.history:HistoryRanker",
}
AUTO = "auto"


def register(name: str, target: str) -> None:
    """Add a ranker: ``target`` is ``"package.module:Factory"``, imported on first use."""
    if name == AUTO or not name.isidentifier():
        raise ValueError(f"a ranker name must be an identifier other than {AUTO!r}, got {name!r}")
    if ":" not in target:
        raise ValueError(f"ranker target must look like 'package.module:Factory', got {target!r}")
    _REGISTRY[name] = target


def ranker_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def choose(name: str, *, model_configured: bool) -> str:
    """The ranker ``name`` means: ``auto`` is the model when one is configured, else the heuristic."""
    if name == AUTO:
        return "llm" if model_configured else "heuristic"
    if name not in _REGISTRY:
        raise ValueError(f"ranker must be one of {', '.join((AUTO, *_REGISTRY))}, got {name!r}")
    return name


def make_ranker(name: str, *, client: Any = None) -> Ranker:
    """The registered ranker called ``name`` (not ``auto``: call ``choose`` first)."""
    if name not in _REGISTRY:
        raise ValueError(f"ranker must be one of {', '.join((AUTO, *_REGISTRY))}, got {name!r}")
    module, _, factory = _REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), factory)(client)
