"""The built-in ranker's model file: per level, feature names and their weights (``tcfl learn`` writes it).

The format (``app/localize/ranker_model.json`` is the shipped one)::

    {"format": "tcfl-ranker", "version": 1,
     "levels": {"block": {"features": ["traceback", "traceback*frame", ...], "weights": [4.0, 0.0, ...]},
                "function": {...}, "line": {...}},
     "trained_on": {"repos": [...], "cases": N, "date": "YYYY-MM-DD"}, "objective": "..."}

Feature names are those of ``app.localize.features.FEATURES``; an unknown one is an error, a
missing one weighs 0. Scoring is a dot product done per channel: a channel's weight in one
failure is its own column's weight plus its context columns' weights times the context, so an
element's score is a sum over its few channels, plus its priors (``prior:size``...) times their
weights (pure Python: no numpy on the triage path).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from app.localize.evidence import Channel
from app.localize.features import CONTEXTS, FEATURES, PRIOR_FEATURES

FORMAT = "tcfl-ranker"
VERSION = 1
MODEL_LEVELS: tuple[str, ...] = ("function", "block", "line")
SHIPPED = "ranker_model.json"  # in this package
HANDSET_LABEL = "hand-set weights"

# The hand-set weights (tuned on the real cases of tests/data/benchmark/real): the ``handset``
# ranker, and the starting point a learned model is compared with.
WEIGHTS: dict[Channel, float] = {
    Channel.TRACEBACK: 4.0,
    Channel.CHECK: 5.0,
    Channel.PSEUDO_ERROR: 3.0,
    Channel.MESSAGE: 3.0,
    Channel.DATA: 2.0,
    Channel.VALUE: 2.5,
    Channel.EXCEPTION: 2.0,
    Channel.SMELL: 2.0,
    Channel.LEXICAL: 1.0,
    Channel.PROXIMITY: 0.5,
    Channel.STRUCTURE: 0.3,
}


class ModelFileError(ValueError):
    """A model file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class LevelModel:
    """One level's weights by feature name (absent features weigh 0)."""

    weights: dict[str, float]

    def channel_weights(self, context: dict[str, float]) -> dict[Channel, float]:
        """Each channel's weight in a failure with this context (its column plus its context columns)."""
        out: dict[Channel, float] = {}
        for name, weight in self.weights.items():
            if name in _PRIOR_NAMES:
                continue
            channel, _, ctx = name.partition("*")
            term = weight * context[ctx] if ctx else weight
            out[Channel(channel)] = out.get(Channel(channel), 0.0) + term
        return out

    def prior_weights(self) -> dict[str, float]:
        """Each prior's weight, by the prior's name (``size``, not ``prior:size``)."""
        return {_PRIOR_NAMES[n]: w for n, w in self.weights.items() if n in _PRIOR_NAMES}

    def to_dict(self) -> dict[str, list[Any]]:
        return {"features": list(self.weights), "weights": list(self.weights.values())}


_PRIOR_NAMES: dict[str, str] = {name: name.partition(":")[2] for name in PRIOR_FEATURES}


@dataclass(frozen=True)
class RankerModel:
    levels: dict[str, LevelModel]
    trained_on: dict[str, Any] = field(default_factory=dict)
    objective: str = ""
    source: str = "shipped"  # the file it was read from ("shipped": the package's own)

    @property
    def label(self) -> str:
        """Which model this is, in a few words, as a result records it."""
        trained = self.trained_on
        how = (
            HANDSET_LABEL
            if trained.get("source") == "hand-set"
            else f"trained on {trained.get('cases', '?')} cases of {len(trained.get('repos') or ())} repos"
            + (f", {trained['date']}" if trained.get("date") else "")
        )
        return f"{self.source} ({how})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "levels": {level: model.to_dict() for level, model in self.levels.items()},
            "trained_on": self.trained_on,
            "objective": self.objective,
        }


def handset_level() -> LevelModel:
    return LevelModel({str(c): w for c, w in WEIGHTS.items()})


def handset_model(source: str = "hand-set") -> RankerModel:
    """A model file holding the hand-set weights at every level (what is shipped until one is trained)."""
    return RankerModel(
        {level: handset_level() for level in MODEL_LEVELS},
        trained_on={"source": "hand-set", "repos": [], "cases": 0, "date": None},
        objective="hand-set weights (no training)",
        source=source,
    )


def parse_model(data: Any, source: str) -> RankerModel:
    """A validated model from decoded JSON; ``ModelFileError`` saying what is wrong otherwise."""

    def bad(why: str) -> ModelFileError:
        return ModelFileError(f"ranker model {source}: {why}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f'not a ranker model (expected "format": "{FORMAT}")')
    if data.get("version") != VERSION:
        raise bad(f"version {data.get('version')!r} is not supported (this tcfl reads version {VERSION})")
    levels = data.get("levels")
    if not isinstance(levels, dict):
        raise bad('"levels" must be an object of level -> {features, weights}')
    missing = [level for level in MODEL_LEVELS if level not in levels]
    extra = sorted(set(levels) - set(MODEL_LEVELS))
    if missing or extra:
        raise bad(f"levels must be exactly {', '.join(MODEL_LEVELS)} (missing {missing}, unknown {extra})")
    known = frozenset(FEATURES)
    out: dict[str, LevelModel] = {}
    for level in MODEL_LEVELS:
        body = levels[level]
        names = body.get("features") if isinstance(body, dict) else None
        weights = body.get("weights") if isinstance(body, dict) else None
        if not isinstance(names, list) or not isinstance(weights, list) or len(names) != len(weights):
            raise bad(f"level {level}: needs lists `features` and `weights` of the same length")
        unknown = [n for n in names if n not in known]
        if unknown:
            raise bad(
                f"level {level}: unknown feature(s) {', '.join(map(str, unknown))}; "
                f"features are a channel name, channel*context with context one of {', '.join(CONTEXTS)},"
                f" or a prior ({', '.join(PRIOR_FEATURES)})"
            )
        if len(set(names)) != len(names):
            raise bad(f"level {level}: a feature is listed twice")
        if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights):
            raise bad(f"level {level}: weights must be numbers")
        out[level] = LevelModel({n: float(w) for n, w in zip(names, weights, strict=True) if w})
    trained = data.get("trained_on")
    return RankerModel(
        out,
        trained_on=trained if isinstance(trained, dict) else {},
        objective=str(data.get("objective") or ""),
        source=source,
    )


def load_model(path: str | os.PathLike[str] | None = None) -> RankerModel:
    """The model file at ``path``; None: the shipped one. Read once per file version."""
    if path is None or str(path) == "":
        return _shipped()
    target = Path(path)
    try:
        stamp = target.stat().st_mtime_ns
    except OSError as exc:
        raise ModelFileError(f"ranker model {path}: cannot read it ({exc.strerror or exc})") from exc
    return _load(str(target), stamp)


@cache
def _shipped() -> RankerModel:
    text = resources.files("app.localize").joinpath(SHIPPED).read_text(encoding="utf-8")
    return parse_model(json.loads(text), "shipped")


@cache
def _load(path: str, stamp: int) -> RankerModel:
    del stamp  # part of the cache key: an edited file is read again
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"ranker model {path}: cannot read it ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"ranker model {path}: not JSON ({exc})") from exc
    return parse_model(data, path)


def write_model(model: RankerModel, path: str | os.PathLike[str]) -> None:
    Path(path).write_text(json.dumps(model.to_dict(), indent=1) + "\n", encoding="utf-8")
