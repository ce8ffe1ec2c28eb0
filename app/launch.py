"""A CI job as a first-class record: its launch, every test of it, and what each failure is.

``tcfl ci``, ``POST /v1/ingest`` and the pytest plugin all record a job the same way
(``record_launch``): every test's run goes to the CI history under the job's identity
(``app.ingest.job``), then the launch is written with each test's verdict and duration and, for
each failure, what the runs recorded *before* this job say of it (new / recurring / regression /
flaky, the first bad commit), then labels of known issues are carried over to its failures.
The stores are handed in by the shell (this module sits below storage and imports none of it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from app.history.records import RunFacts, RunRecord, env_fingerprint
from app.history.signatures import Run, site_sig, verdict_of
from app.ingest.job import Job
from app.ingest.testkey import parse_test_id

if TYPE_CHECKING:
    from app.analysis.model import Script
    from app.ci import CiReport
    from app.ingest.base import TestRun
    from app.ingest.resolve import Checkout

FAILING = ("fail", "error")
KNOWN = "known issue"
NEW = "new failure"


@dataclass(frozen=True)
class LaunchTest:
    """One test of a launch: its verdict and duration, and for a failure what it is."""

    key: str
    test_id: str
    verdict: str
    duration_s: float | None = None
    error: str = ""
    err_sig: str | None = None
    run_id: int | None = None
    triage_id: int | None = None
    problem: str | None = None
    top: str | None = None  # path:line of the first-ranked element
    site: str | None = None  # the first-ranked element's content hash (``site_sig``)
    history: Mapping[str, Any] | None = None  # ``verdict_of``: classification, flaky, first bad

    @property
    def failed(self) -> bool:
        return self.verdict in FAILING

    @property
    def classification(self) -> str | None:
        if self.history is None:
            return None
        return "flaky" if self.history.get("flaky") else self.history.get("classification")


@dataclass(frozen=True)
class Launch:
    """One CI job's results as recorded."""

    job: Job
    format: str
    started_at: datetime
    tests: tuple[LaunchTest, ...]
    warnings: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        verdicts = Counter(t.verdict for t in self.tests)
        durations = [t.duration_s for t in self.tests if t.duration_s is not None]
        kinds = Counter(t.classification for t in self.tests if t.failed)
        ran = len(self.tests) - verdicts["skip"]
        return {
            "tests": len(self.tests),
            "passed": verdicts["pass"],
            "failed": verdicts["fail"] + verdicts["error"],
            "skipped": verdicts["skip"],
            "pass_rate": round(verdicts["pass"] / ran, 4) if ran else None,
            "duration_s": round(sum(durations), 3) if durations else None,
            "new": kinds["new"],
            "recurring": kinds["recurring"],
            "regression": kinds["regression"],
            "flaky": kinds["flaky"],
        }


@dataclass(frozen=True)
class Known:
    """A failure that is a known issue: the label it carries (applied by hand or carried over)."""

    label_id: int
    defect_type: str
    bug_url: str | None = None
    comment: str | None = None
    auto: bool = False

    def text(self) -> str:
        """``known issue: <label> <link>``, as every output of ``tcfl ci`` says it."""
        return " ".join(p for p in (f"{KNOWN}: {self.defect_type}", self.bug_url) if p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label_id": self.label_id,
            "defect_type": self.defect_type,
            "bug_url": self.bug_url,
            "comment": self.comment,
            "auto": self.auto,
            "text": self.text(),
        }


@dataclass(frozen=True)
class Recorded:
    """What recording a job did: its launch (new or found again), the runs, the known issues."""

    launch_id: int
    new: bool
    runs: tuple[Mapping[str, Any], ...] = ()
    known: Mapping[str, Known] = field(default_factory=dict)  # failed test id -> its label

    @property
    def new_runs(self) -> int:
        return sum(not r.get("duplicate") for r in self.runs)


def run_records(
    report: CiReport,
    job: Job,
    started_at: datetime,
    *,
    checkout: Checkout | None = None,
    resolve_failures: bool = False,
    facts: Mapping[TestRun, RunFacts] | None = None,
    passes: Mapping[TestRun, tuple[tuple[Script, ...], RunFacts | None]] | None = None,
) -> list[RunRecord]:
    """Every test run of a job's results (passes too) as history records, named by the job.

    A run is the job's run of a test: its identity is the job's key and the test's id (a test
    reported twice in one job is its first, second, ... run there), so the same job sent again
    records nothing new and another job of the same file records every run again. A failure
    carries the scripts it was triaged with and the signature ``tcfl ci`` gave it; given the
    ``checkout``, a pass gets its scripts by the same resolution, so it is stored with a version and
    counts by its must-run lines (and, with ``resolve_failures``, so does a failure that was not
    triaged: the CLI reads a local checkout, where that costs nothing and risks nothing). ``facts``:
    failures' facts kept from their triages (``LocalTriager.facts``), with the record's err_sig;
    ``passes``: passing runs' scripts, found as here, and their facts where the triages computed
    them (``LocalTriager.passes``).
    """
    from app.ingest.resolve import find_scripts

    results = report.results
    if results is None:
        return []
    sources = {t.run.test_id: t.sources for t in report.triaged}
    signatures = {t.run: t.signature for t in report.triaged}
    own = {t.run: t.sources for t in report.triaged}
    seen: Counter[str] = Counter()
    out = []
    for run in results.runs:
        verdict = run.verdict if run.verdict in ("pass", "fail", "error", "skip") else "error"
        key, params = parse_test_id(run.test_id, run.suite)
        seen[run.test_id] += 1
        place = "" if seen[run.test_id] == 1 else f"#{seen[run.test_id]}"
        found = passes.get(run) if passes is not None and verdict == "pass" else None
        scripts = sources.get(run.test_id) or (
            (found[0] if found is not None else find_scripts(run, checkout)[0])
            if checkout is not None and (verdict == "pass" or resolve_failures)
            else ()
        )
        err_sig = signatures.get(run) if verdict in FAILING else None
        kept = facts.get(run) if facts is not None and err_sig else None
        if kept is not None and own.get(run) != scripts:  # another run of the test id was triaged
            kept = None
        if found is not None and found[1] is not None and tuple(scripts) == found[0]:
            kept = found[1]
        out.append(
            RunRecord(
                key=key,
                test_id=run.test_id,
                params=params,
                verdict=verdict,
                started_at=started_at,
                job_url=job.job_url,
                pipeline=job.pipeline,
                commit=job.commit,
                scripts=tuple(scripts),
                log=run.log or None,
                err_sig=err_sig,
                job=job.key + place,
                facts=None if kept is None else replace(kept, facts=(err_sig, *kept.facts[1:])),
            )
        )
    return out


def launch_of(
    report: CiReport,
    job: Job,
    started_at: datetime,
    records: Sequence[RunRecord],
    stored: Sequence[Mapping[str, Any]],
    past: Mapping[str, Sequence[Run]],
) -> Launch:
    """The launch of a recorded job: each test with its stored run, and each failure's history
    verdict from the runs before this job (``past``: canonical key -> runs, oldest first)."""
    runs = report.results.runs if report.results is not None else ()
    triaged = {t.run: t for t in report.triaged}
    tests = []
    for run, record, row in zip(runs, records, stored, strict=True):
        item = triaged.get(run)
        failed = record.verdict in FAILING
        sig = row.get("err_sig") or (item.signature if item is not None else None)
        top = item.result.ranking[0] if item is not None and item.result and item.result.ranking else None
        history = None
        if failed:
            current = Run(
                record.verdict,
                row.get("version_id") or "",
                env_fingerprint(record.env),
                sig,
                job.commit,
                job.job_url,
            )
            history = verdict_of(past.get(record.key.key, ()), current)
        tests.append(
            LaunchTest(
                key=record.key.key,
                test_id=run.test_id,
                verdict=record.verdict,
                duration_s=run.duration_s,
                error=(item.error if item is not None else run.error)[:2000] if failed else "",
                err_sig=sig if failed else None,
                run_id=row.get("run_id"),
                triage_id=item.triage_id if item is not None else None,
                problem=item.problem if item is not None else None,
                top=item.top if item is not None else None,
                site=site_sig(top.code) if top is not None else None,
                history=history,
            )
        )
    return Launch(job, report.format, started_at, tuple(tests), tuple(report.warnings))


def record_launch(
    report: CiReport,
    job: Job,
    started_at: datetime,
    records: Sequence[RunRecord],
    *,
    history: Any,
    launches: Any,
    labels: Any,
    ingest_id: int | None = None,
) -> Recorded:
    """Record a job: its runs (``history.add_runs``), then its launch unless the job was recorded
    before (``launches``), then the labels carried over to its failures (``labels``); answers the
    launch and the known issues among its failures. The stores are ``app.store``'s."""
    stored = history.add_runs(list(records))
    found = launches.find(job.identity)
    if found is None:
        failing = {r.key.key for r in records if r.verdict in FAILING}
        past = launches.past_runs(failing, before=started_at)
        launch = launch_of(report, job, started_at, records, stored, past)
        launch_id, new = launches.create(launch, ingest_id=ingest_id), True
        labels.carry_over(launch_id)
    else:
        launch_id, new = found, False
    known = labels.known(launch_id)
    return Recorded(launch_id, new, tuple(stored), known)


def with_known(report: CiReport, known: Mapping[str, Known]) -> CiReport:
    """The report with each failure's known issue (failed test id -> label) for the emitters."""
    return replace(report, known=dict(known))


@dataclass(frozen=True)
class Label:
    """A label as stored: on one failure (``failure_id``, a launch test) or on a group of failures
    (``err_sig``, or ``site``: a fault site's content hash); ``auto`` when carried over from the
    group label ``origin_id``; ``undone`` when a person took it off."""

    id: int
    defect_type: str
    bug_url: str | None = None
    comment: str | None = None
    err_sig: str | None = None
    site: str | None = None
    failure_id: int | None = None
    auto: bool = False
    origin_id: int | None = None
    undone: bool = False

    def known(self) -> Known:
        return Known(self.id, self.defect_type, self.bug_url, self.comment, self.auto)


def group_label(
    groups: Sequence[Label], err_sig: str | None, site: str | None, refused: set[int]
) -> Label | None:
    """The group label a failure with this signature (else this fault site) falls under: the newest
    active one, except those a person took off this failure before (``refused``: their ids)."""
    usable = [g for g in groups if not g.undone and g.failure_id is None and g.id not in refused]
    for match in (
        lambda g: err_sig is not None and g.err_sig == err_sig,
        lambda g: site is not None and g.site == site,
    ):
        found = [g for g in usable if match(g)]
        if found:
            return max(found, key=lambda g: g.id)
    return None


def failure_label(
    own: Sequence[Label], groups: Sequence[Label], err_sig: str | None, site: str | None
) -> Label | None:
    """The label a failure carries: its own newest active label, else its group's (``group_label``);
    an auto label a person undid keeps its group's label off this failure."""
    active = [label for label in own if not label.undone]
    if active:
        return max(active, key=lambda label: (not label.auto, label.id))
    refused = {label.origin_id for label in own if label.undone and label.origin_id is not None}
    return group_label(groups, err_sig, site, refused)
