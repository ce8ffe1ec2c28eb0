"""Run records as CI reports them: test identity, verdict, environment, links (docs/design.md §8.1).

A test's identity outlives its parameters and variants: pytest's ``[param]``, avocado's
``;variant`` and tempest's ``[tags]`` go to the run, the rest is the test key, one key whichever
tool named the test (``app.ingest.testkey``). Everything here validates plain data and raises
``ValueError`` with a message a person can act on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from app.analysis.model import Script
from app.ingest.testkey import TestKey, parse_test_id

__all__ = ["VERDICTS", "RunRecord", "TestKey", "env_fingerprint", "parse_run", "parse_test_id"]

VERDICTS = frozenset({"pass", "fail", "error", "skip"})
_ALIASES = {"passed": "pass", "failed": "fail", "failure": "fail", "skipped": "skip", "ok": "pass"}


def env_fingerprint(env: Mapping[str, Any]) -> str:
    """The same environment (whatever its key order) gives the same short fingerprint."""
    blob = json.dumps({str(k): str(v) for k, v in env.items()}, sort_keys=True)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class RunRecord:
    key: TestKey
    test_id: str
    params: str
    verdict: str
    started_at: datetime
    env: Mapping[str, str] = field(default_factory=dict)
    pipeline: str | None = None
    job_url: str | None = None
    commit: str | None = None
    scripts: tuple[Script, ...] = ()
    log: str | None = None
    err_sig: str | None = None  # the failure's signature when the caller has it (``tcfl ci``'s)

    def identity(self) -> str:
        """What makes a re-sent record the same run: (job_url, test id), else its whole content."""
        if self.job_url:
            basis = [self.job_url, self.test_id]
        else:
            basis = [
                self.test_id,
                self.verdict,
                self.started_at.isoformat(),
                env_fingerprint(self.env),
                self.log or "",
                *(f"{s.path}\0{s.content}" for s in self.scripts),
            ]
        return hashlib.sha256("\x1f".join(basis).encode("utf-8")).hexdigest()


def parse_run(data: Any, *, now: datetime | None = None) -> RunRecord:
    """One run record (a JSON object) -> RunRecord; ``ValueError`` naming the bad field otherwise."""
    if not isinstance(data, Mapping):
        raise ValueError("a run record must be a JSON object")
    test_id = data.get("test_id")
    if not isinstance(test_id, str):
        raise ValueError("test_id (a string) is required")
    suite = data.get("suite") or ""
    if not isinstance(suite, str):
        raise ValueError("suite must be a string")
    key, params = parse_test_id(test_id, suite)
    verdict = str(data.get("verdict", data.get("outcome", ""))).strip().lower()
    verdict = _ALIASES.get(verdict, verdict)
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(sorted(VERDICTS))}, got {verdict or None!r}")
    started = data.get("started_at")
    if started is None:
        started_at = now or datetime.now(UTC)
    elif isinstance(started, str):
        try:
            started_at = datetime.fromisoformat(started.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"started_at is not an ISO 8601 time: {started!r}") from None
        if started_at.tzinfo is None:
            started_at = started_at.replace(tzinfo=UTC)
    else:
        raise ValueError("started_at must be an ISO 8601 string")
    env = data.get("env") or {}
    if not isinstance(env, Mapping):
        raise ValueError("env must be an object of names to values")
    ci = data.get("ci") or {}
    if not isinstance(ci, Mapping):
        raise ValueError("ci must be an object with pipeline, job_url, commit")
    scripts_in = data.get("scripts") or []
    if not isinstance(scripts_in, list) or not all(
        isinstance(s, Mapping) and isinstance(s.get("path"), str) and isinstance(s.get("content"), str)
        for s in scripts_in
    ):
        raise ValueError('scripts must be a list of {"path", "content"} objects')
    log = data.get("log")
    if log is not None and not isinstance(log, str):
        raise ValueError("log must be a string")
    if isinstance(data.get("params"), str) and data["params"]:
        params = data["params"]
    return RunRecord(
        key=key,
        test_id=test_id.strip(),
        params=params,
        verdict=verdict,
        started_at=started_at,
        env={str(k): str(v) for k, v in env.items()},
        pipeline=_opt(ci.get("pipeline")),
        job_url=_opt(ci.get("job_url")),
        commit=_opt(ci.get("commit")),
        scripts=tuple(Script(s["path"], s["content"]) for s in scripts_in),
        log=log,
    )


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)
