"""Typed evidence: why an element is suspicious, as records rankers, explanations and views read.

Every ranking channel emits ``Evidence`` records instead of free text, so that the CLI, the
JSON result, the dashboard and the fusion of channels can weigh, filter and show them without
parsing sentences. ``detail`` is the one human sentence; everything else is data.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Channel(StrEnum):
    """Where a piece of evidence came from; one name per channel, used in ablations too."""

    TRACEBACK = "traceback"  # a traceback frame in the scripts
    CHECK = "check"  # a deliberate check (assert, self.fail, raise TestFail) and what it checks
    VALUE = "value"  # a runtime value in the log equal to a literal or default of the code
    EXCEPTION = "exception"  # the exception's kind mapped to the code that should have prevented it
    SMELL = "smell"  # a code smell that is almost always a fault (``is []``, ``'None'``)
    PSEUDO_ERROR = "pseudo_error"  # no frame in the scripts: a statement inferred as the error site
    MESSAGE = "message"  # a literal of the code found in the error message
    DATA = "data"  # def-use / control dependence on the error statement
    LEXICAL = "lexical"  # BM25 similarity to the failure text
    PROXIMITY = "proximity"  # ran shortly before the failure
    STRUCTURE = "structure"  # no failure evidence: what usually fails in a test body (a guess)
    ECHO = "echo"  # the log repeats this line of the scripts (a traceback's or a report's source line)
    CALLER = "caller"  # an outer frame: calls the code where the failure surfaced
    PRIOR = "prior"  # what the element is (size, a check, a test body, it logged): no failure evidence
    MODEL = "model"  # the model ranked it (its rationale in ``detail`` when it gave one)
    SPECTRUM = "spectrum"  # CI history: ran in failing runs more than in passing ones (Ochiai, DStar)
    CP = "cp"  # CI history: infection propagated over the block graph from failing runs
    DIFF = "diff"  # CI history: changed since the last passing version of the script
    HISTORY_VALUE = "history_value"  # CI history: a logged value class seen only in failing runs
    NEW_LINES = "new_lines"  # CI history: printed a log line (masked) no passing run printed


# The channels of the built-in heuristic ranker, in the order ablations report them.
HEURISTIC_CHANNELS: tuple[Channel, ...] = (
    Channel.TRACEBACK,
    Channel.PSEUDO_ERROR,
    Channel.CHECK,
    Channel.DATA,
    Channel.VALUE,
    Channel.EXCEPTION,
    Channel.SMELL,
    Channel.MESSAGE,
    Channel.PROXIMITY,
    Channel.LEXICAL,
    Channel.STRUCTURE,
    Channel.ECHO,
    Channel.CALLER,
    Channel.PRIOR,
)
# Ranking channels ``disabled_channels`` accepts: every channel (the history ones too) but the
# model's. The enhanced trace's refinements (app.analysis.context.REFINEMENTS) share the option.
SWITCHES: frozenset[str] = frozenset(str(c) for c in Channel if c is not Channel.MODEL)
ABLATED: tuple[str, ...] = tuple(str(c) for c in HEURISTIC_CHANNELS)


@dataclass(frozen=True, slots=True)
class Evidence:
    channel: Channel
    weight: float  # this record's contribution to the element's score, after channel weights
    path: str
    line: int  # the code line the evidence points at (1-based)
    detail: str  # one sentence for a person: why this line is suspicious
    source: str | None = None  # the log line, frame or message text it was read from
    source_line: int | None = None  # that text's 1-based line in the log, when it came from the log

    def to_dict(self) -> dict[str, Any]:
        return {
            "channel": str(self.channel),
            "weight": round(self.weight, 4),
            "path": self.path,
            "line": self.line,
            "detail": self.detail,
            "source": self.source,
            "source_line": self.source_line,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            channel=Channel(data["channel"]),
            weight=float(data["weight"]),
            path=str(data["path"]),
            line=int(data["line"]),
            detail=str(data["detail"]),
            source=data.get("source"),
            source_line=data.get("source_line"),
        )
