"""Run records as CI reports them: test identity, verdict, environment, links (docs/design.md §8.1).

A test's identity outlives its parameters and variants: pytest's ``[param]``, avocado's
``;variant`` and tempest's ``[tags]`` go to the run, the rest is the test key, one key whichever
tool named the test (``app.ingest.testkey``). Everything here validates plain data and raises
``ValueError`` with a message a person can act on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.analysis.model import ParsedLog, Program, Script
from app.ingest.job import Job
from app.ingest.testkey import TestKey, parse_test_id

if TYPE_CHECKING:
    from app.analysis.parsed import ParseCache

__all__ = [
    "VERDICTS",
    "RunRecord",
    "TestKey",
    "env_fingerprint",
    "parse_run",
    "parse_test_id",
    "scope_paths",
    "scoped",
    "with_job",
]

VERDICTS = frozenset({"pass", "fail", "error", "skip"})
_ALIASES = {"passed": "pass", "failed": "fail", "failure": "fail", "skipped": "skip", "ok": "pass"}


def env_fingerprint(env: Mapping[str, Any]) -> str:
    """The same environment (whatever its key order) gives the same short fingerprint."""
    blob = json.dumps({str(k): str(v) for k, v in env.items()}, sort_keys=True)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:12]


# (err_sig, error message, estimated trace, printed values): what the history keeps of a run
Facts = tuple[str | None, str | None, dict[str, Any] | None, dict[str, Any] | None]


@dataclass(frozen=True)
class RunFacts:
    """A run's facts computed before it is stored (``app.history.facts.batch_facts``): the scripts
    that make its version (its test's own, ``scoped``), the facts, and why none could be computed."""

    paths: tuple[str, ...]
    facts: Facts
    warning: str | None = None
    packed: bytes | None = None  # the trace as ``app.history.packed`` stores it, when it packs


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
    job: str | None = None  # the job's key (``app.ingest.job.Job.key``) and the run's place in it
    # computed in the analysis pool before the run is stored; never part of its identity
    facts: RunFacts | None = field(default=None, compare=False, repr=False)

    def identity(self) -> str:
        """What makes a re-sent record the same run: (job, test id), else (job_url, test id), else
        its whole content."""
        if self.job or self.job_url:
            basis = [self.job or self.job_url or "", self.test_id]
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
    if not isinstance(data.get("ci") or {}, Mapping):
        raise ValueError("ci must be an object with pipeline, job_id, job_url, commit")
    ci = {**{k: data[k] for k in JOB_FIELDS if data.get(k) is not None}, **(data.get("ci") or {})}
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
    named = {"test_id": test_id, "suite": suite, "params": params}
    named.update({k: str(v) for k, v in ci.items() if k in JOB_FIELDS and v is not None})
    for field_name, value in named.items():
        if "\x00" in value:  # no database keeps it (PostgreSQL refuses NUL in text)
            raise ValueError(f"{field_name} must not contain NUL characters")
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
        job=_job_key(ci),
    )


JOB_FIELDS = ("job_url", "pipeline", "job_id", "commit")  # a run record's CI fields, top level or in "ci"


def with_job(record: RunRecord, job: Job) -> RunRecord:
    """A record that names no CI job of its own, named by ``job`` (``tcfl ingest``'s flags and CI
    environment): its links, and its identity when the job has one."""
    if record.job or record.job_url or record.pipeline or record.commit:
        return record
    key = job.key if job.job_url or (job.pipeline and job.job_id) else None
    started = job.started_at or record.started_at
    return replace(
        record, job_url=job.job_url, pipeline=job.pipeline, commit=job.commit, job=key, started_at=started
    )


def _job_key(ci: Mapping[str, Any]) -> str | None:
    """The job a record names (pipeline + job id, or its URL), as ``app.ingest.job`` keys it;
    None when it names none (the record is then known by its content)."""
    job = Job(
        job_url=_opt(ci.get("job_url")), pipeline=_opt(ci.get("pipeline")), job_id=_opt(ci.get("job_id"))
    )
    return job.key if job.job_url or (job.pipeline and job.job_id) else None


def scope_paths(program: Program, test: str, frame_paths: Iterable[str] = ()) -> frozenset[str] | None:
    """The scripts that make a test's version: its own file, the files it can reach
    (``app.analysis.mustrun.reached_files``) and those its failure's traceback frames name.
    None when no function of the scripts is the test (every script given counts then)."""
    from app.analysis.mustrun import reached_files

    reached = reached_files(program, test)
    return None if reached is None else reached | frozenset(frame_paths)


def scoped(record: RunRecord, parses: ParseCache, parsed_log: ParsedLog | None = None) -> RunRecord:
    """The record with only its test's scripts (``scoped_scripts``); ``parsed_log``: the record's
    log parsed already (``parse_log``)."""
    if not record.scripts:
        return record
    failed = record.verdict in ("fail", "error")
    kept = scoped_scripts(record.scripts, record.key, record.log if failed else None, parses, parsed_log)
    return record if kept is record.scripts else replace(record, scripts=kept)


def scoped_scripts(
    scripts: tuple[Script, ...],
    key: TestKey,
    failure_log: str | None,
    parses: ParseCache,
    parsed_log: ParsedLog | None = None,
) -> tuple[Script, ...]:
    """A run's script version (``scope_paths``): its test's own file and the files its trace
    reaches, not whatever list was sent with it; the failure's log names frames' files too.
    ``scripts`` itself when nothing is left out or the scripts do not parse."""
    from app.analysis.logparse import parse_log, script_frames
    from app.analysis.parsed import log_patterns

    try:
        program = parses.get(list(scripts), log_patterns(())).program
    except ValueError:
        return scripts
    frames: list[str] = []
    if failure_log:
        files = {f.path: f.lines for f in program.files}
        parsed = parse_log(failure_log) if parsed_log is None else parsed_log
        frames = [f.path for f in script_frames(parsed.frames, files)[0]]
    paths = scope_paths(program, key.key, frames) or scope_paths(program, key.name, frames)
    if paths is None or all(s.path in paths for s in scripts):
        return scripts
    return tuple(s for s in scripts if s.path in paths)


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)
