"""Which CI job a results file came from: the launch a run belongs to, and how it is named.

A job is identified by what CI says about it, in this order (README, "Launches"):

1. a pipeline and a job id (``CI_PROJECT_PATH`` + ``CI_JOB_ID`` on GitLab, the repository and
   workflow + run id, attempt and job on GitHub Actions, ``JOB_NAME`` + ``BUILD_NUMBER`` on Jenkins);
2. the job's URL (``--job-url``, ``job_url``; the URL of one job, never shared by two);
3. otherwise the commit, the digest of the results file and the job's start time when one was
   given: two jobs that wrote different results files are two jobs, and the same file sent again
   is the same job.

The CI environment variables of GitHub Actions, GitLab CI and Jenkins are read by default and
any field given explicitly wins. Pure: the environment is passed in as a mapping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

MAX_FIELD = 1000  # characters kept of a URL, pipeline or job id


@dataclass(frozen=True)
class Job:
    """One CI job as far as it is known; every field optional."""

    job_url: str | None = None
    pipeline: str | None = None
    job_id: str | None = None
    commit: str | None = None
    started_at: datetime | None = None  # given or read from CI; None: the time it was recorded
    digest: str | None = None  # sha256 of the results file(s) the job left
    source: str | None = None  # the results file's name
    ci: str | None = None  # which CI's environment filled it in: github, gitlab, jenkins

    @property
    def key(self) -> str:
        """The job's identity: pipeline + job id, else its URL, else commit + results + time.

        A job named by its URL alone keeps the identity runs had before launches existed (the
        URL itself), so a job re-sent across versions is still recognised.
        """
        if self.pipeline and self.job_id:
            return f"job:{self.pipeline}#{self.job_id}"
        if self.job_url:
            return self.job_url
        when = self.started_at.isoformat() if self.started_at is not None else ""
        return f"results:{self.commit or ''}:{self.digest or ''}:{when}"

    @property
    def identity(self) -> str:
        """``key`` as 64 hex digits (what the launches table is unique on)."""
        return hashlib.sha256(self.key.encode("utf-8")).hexdigest()

    def given(self, **fields: object) -> Job:
        """This job with the fields given explicitly (None and "" leave a field as it is)."""
        changes = {k: v for k, v in fields.items() if v not in (None, "")}
        for name in ("job_url", "pipeline", "job_id", "commit", "source"):
            if name in changes:
                value = str(changes[name])
                if "\x00" in value:  # no database keeps it (PostgreSQL refuses NUL in text)
                    if name != "source":
                        raise ValueError(f"{name} must not contain NUL characters")
                    value = value.replace("\x00", "")
                changes[name] = value.strip()[:MAX_FIELD] or None
        if "started_at" in changes and not isinstance(changes["started_at"], datetime):
            changes["started_at"] = parse_time(str(changes["started_at"]))
        url = changes.get("job_url")
        if url is not None and not str(url).startswith(("https://", "http://")):
            raise ValueError(f"job_url must be an http(s) link, got {str(url)[:80]!r}")
        return replace(self, **changes)  # type: ignore[arg-type]


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (``Z`` accepted; a time without a zone is UTC); ``ValueError`` otherwise."""
    try:
        found = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"started_at is not an ISO 8601 time: {text!r}") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def start_of(job: Job, recorded: datetime | None, file_time: datetime | None = None) -> datetime:
    """When the job started: as given (or by the CI), as first recorded (``recorded``: its stored
    launch's start, None when it has none), as its results file says, else now."""
    if job.started_at is not None:
        return job.started_at
    if recorded is not None:
        return recorded if recorded.tzinfo else recorded.replace(tzinfo=UTC)
    return file_time if file_time is not None else datetime.now(UTC)


def digest(*parts: bytes) -> str:
    """The digest of a job's results files, in the order given."""
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


def from_env(env: Mapping[str, str]) -> Job:
    """The job the CI environment describes (GitHub Actions, GitLab CI, Jenkins), or an empty one."""
    get = lambda name: (env.get(name) or "").strip() or None  # noqa: E731
    if get("GITHUB_ACTIONS") == "true" and get("GITHUB_RUN_ID"):
        server = get("GITHUB_SERVER_URL") or "https://github.com"
        repo = get("GITHUB_REPOSITORY") or ""
        run, attempt = get("GITHUB_RUN_ID"), get("GITHUB_RUN_ATTEMPT") or "1"
        # the run's URL: a workflow run's jobs share it, so the job is named by run, attempt and job
        return Job(
            job_url=f"{server}/{repo}/actions/runs/{run}/attempts/{attempt}" if repo else None,
            pipeline=":".join(p for p in (repo, get("GITHUB_WORKFLOW")) if p) or None,
            job_id=f"{run}.{attempt}.{get('GITHUB_JOB') or ''}",
            commit=get("GITHUB_SHA"),
            ci="github",
        )
    if get("GITLAB_CI") == "true" and get("CI_JOB_ID"):
        started = get("CI_JOB_STARTED_AT")
        return Job(
            job_url=get("CI_JOB_URL"),
            pipeline=get("CI_PROJECT_PATH"),
            job_id=get("CI_JOB_ID"),
            commit=get("CI_COMMIT_SHA"),
            started_at=_time_or_none(started),
            ci="gitlab",
        )
    if get("JENKINS_URL") and get("BUILD_NUMBER"):
        return Job(
            job_url=get("BUILD_URL"),
            pipeline=get("JOB_NAME"),
            job_id=get("BUILD_NUMBER"),
            commit=get("GIT_COMMIT"),
            ci="jenkins",
        )
    return Job()


def _time_or_none(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None
