"""Readers of what CI jobs leave behind: one module per format, one interface.

``read_results(path)`` picks the format from the file itself (or takes ``fmt``) and answers a
``Results`` with every test run, passing ones too. Readers never triage and never look for
scripts; ``resolve.py`` finds the scripts and ``app.ci`` triages. A malformed record is a
warning and the rest are read; every value is made safe (``clean.py``) before it leaves here.
"""

from __future__ import annotations

from pathlib import Path

from app.analysis.logparse import decode_log
from app.ingest.base import (
    FAILED,
    MAX_RESULTS_BYTES,
    VERDICTS,
    IngestError,
    Results,
    TestRun,
)
from app.ingest.clean import clean_results
from app.ingest.filetime import file_started

__all__ = [
    "FAILED",
    "FORMATS",
    "VERDICTS",
    "IngestError",
    "Results",
    "TestRun",
    "merge",
    "parse_bytes",
    "read_folder",
    "read_results",
    "sniff",
]

FORMATS: tuple[str, ...] = ("auto", "junit", "reportlog", "avocado", "subunit", "joblog")
RESULT_NAMES = ("*.xml", "*.jsonl", "*.subunit", "*.log", "*.txt")  # looked for inside archives


def read_results(path: Path, fmt: str = "auto") -> Results:
    """Every test run in one results file or avocado job folder; ``IngestError`` when unreadable."""
    if fmt not in FORMATS:
        raise IngestError(f"unknown results format {fmt!r}; one of {', '.join(FORMATS)}")
    from app.ingest import avocado  # readers load when used: junitparser and subunit are slow imports

    if path.is_dir():
        if fmt in ("auto", "avocado") and avocado.sniff_dir(path):
            runs, warnings, started = avocado.read(path)
            return clean_results(Results("avocado", tuple(runs), tuple(warnings), started_at=started))
        raise IngestError(
            f"{path}: a folder without results.json (give a results file or an avocado job folder)"
        )
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror})") from None
    if size > MAX_RESULTS_BYTES:
        raise IngestError(f"{path}: larger than {MAX_RESULTS_BYTES} bytes")
    if fmt == "avocado" or (fmt == "auto" and path.name == "results.json" and avocado.sniff_dir(path.parent)):
        runs, warnings, started = avocado.read(path)
        return clean_results(Results("avocado", tuple(runs), tuple(warnings), started_at=started))
    try:
        with path.open("rb") as stream:  # bounded: /dev/zero and pipes report size 0
            data = stream.read(MAX_RESULTS_BYTES + 1)
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > MAX_RESULTS_BYTES:
        raise IngestError(f"{path}: larger than {MAX_RESULTS_BYTES} bytes")
    return parse_bytes(data, str(path), fmt)


def parse_bytes(data: bytes, name: str, fmt: str = "auto") -> Results:
    """A results file's bytes (avocado folders need ``read_results``)."""
    from dataclasses import replace

    results = _parse(data, name, fmt)
    return clean_results(replace(results, started_at=file_started(data, results.format)))


def _parse(data: bytes, name: str, fmt: str) -> Results:
    from app.ingest import joblog, junit, reportlog, subunit

    if fmt == "auto":
        fmt = sniff(data)
    if not data.strip():
        raise IngestError(f"{name}: empty results file")
    warnings: list[str] = []
    if fmt == "junit":
        return Results("junit", tuple(junit.parse(data, name, warnings)), tuple(warnings), raw=data)
    if fmt == "reportlog":
        return Results("reportlog", tuple(reportlog.parse(data, name, warnings)), tuple(warnings))
    if fmt == "subunit":
        return Results("subunit", tuple(subunit.parse(data, name, warnings)), tuple(warnings))
    if fmt == "avocado":
        raise IngestError(f"{name}: avocado results are a job folder (results.json + test-results/)")
    text, warnings = decode_log(data)
    runner, runs = joblog.split(text)
    if not runs:
        raise IngestError(
            f"{name}: no test results found (not JUnit XML, a pytest report log, a subunit v2 stream, "
            "or a job log with avocado, stestr, unittest or pytest test markers)"
        )
    return Results(f"joblog:{runner}", tuple(runs), tuple(warnings))


def sniff(data: bytes) -> str:
    from app.ingest import junit, reportlog, subunit

    head = data[:4096]
    if subunit.sniff(head):
        return "subunit"
    if junit.sniff(head):
        return "junit"
    if reportlog.sniff(head):
        return "reportlog"
    if head.lstrip().startswith(b"<"):
        return "junit"  # XML of some kind: the JUnit reader says what is wrong with it
    return "joblog"


def read_folder(folder: Path, fmt: str, name: str) -> list[Results]:
    """Every results file in an unpacked archive: avocado job folders, then files by name.

    Messages name files as ``archive/member``: the folder is a temporary one, not the user's.
    """
    jobs = sorted({p.parent for p in folder.rglob("results.json") if p.is_file()})
    found: list[Results] = []
    for job in jobs:
        try:
            found.append(_relabel(read_results(job, "avocado"), folder, name))
        except IngestError as exc:
            raise IngestError(_inside_archive(str(exc), folder, name)) from None
    for pattern in RESULT_NAMES:
        for path in sorted(folder.rglob(pattern)):
            if any(path.is_relative_to(job) for job in jobs) or not path.is_file():
                continue
            try:
                found.append(_relabel(read_results(path, fmt), folder, name))
            except IngestError:
                continue  # an archive holds other files too; only results files count
    if not found:
        raise IngestError(f"{name}: no results file inside the archive")
    return found


def _inside_archive(text: str, folder: Path, name: str) -> str:
    return text.replace(f"{folder}/", f"{name}/").replace(str(folder), name)


def _relabel(results: Results, folder: Path, name: str) -> Results:
    from dataclasses import replace

    def fix(texts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_inside_archive(t, folder, name) for t in texts)

    runs = tuple(replace(run, warnings=fix(run.warnings)) if run.warnings else run for run in results.runs)
    return replace(results, runs=runs, warnings=fix(results.warnings))


def merge(parts: list[Results]) -> Results:
    """Several results files as one job; the JUnit document is kept only when it is the only input."""
    if len(parts) == 1:
        return parts[0]
    times = [p.started_at for p in parts if p.started_at is not None]
    return Results(
        "+".join(dict.fromkeys(p.format for p in parts)),
        tuple(run for part in parts for run in part.runs),
        tuple(w for p in parts for w in p.warnings),
        started_at=min(times) if times else None,
    )
