"""Readers of what CI jobs leave behind: one module per format, one interface.

``read_results(path)`` picks the format from the file itself (or takes ``fmt``) and answers a
``Results`` with every test run, passing ones too. Readers never triage and never look for
scripts; ``resolve.py`` finds the scripts and ``app.ci`` triages.
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
            runs, warnings = avocado.read(path)
            return Results("avocado", tuple(runs), tuple(warnings))
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
        runs, warnings = avocado.read(path)
        return Results("avocado", tuple(runs), tuple(warnings))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_bytes(data, str(path), fmt)


def parse_bytes(data: bytes, name: str, fmt: str = "auto") -> Results:
    """A results file's bytes (avocado folders need ``read_results``)."""
    from app.ingest import joblog, junit, reportlog, subunit

    if fmt == "auto":
        fmt = sniff(data)
    if not data.strip():
        raise IngestError(f"{name}: empty results file")
    if fmt == "junit":
        return Results("junit", tuple(junit.parse(data, name)), raw=data)
    if fmt == "reportlog":
        return Results("reportlog", tuple(reportlog.parse(data, name)))
    if fmt == "subunit":
        return Results("subunit", tuple(subunit.parse(data, name)))
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
    """Every results file in an unpacked archive: avocado job folders, then files by name."""
    jobs = sorted({p.parent for p in folder.rglob("results.json")})
    found = [read_results(job, "avocado") for job in jobs]
    for pattern in RESULT_NAMES:
        for path in sorted(folder.rglob(pattern)):
            if any(path.is_relative_to(job) for job in jobs):
                continue
            try:
                found.append(read_results(path, fmt))
            except IngestError:
                continue  # an archive holds other files too; only results files count
    if not found:
        raise IngestError(f"{name}: no results file inside the archive")
    return found


def merge(parts: list[Results]) -> Results:
    """Several results files as one job; the JUnit document is kept only when it is the only input."""
    if len(parts) == 1:
        return parts[0]
    return Results(
        "+".join(dict.fromkeys(p.format for p in parts)),
        tuple(run for part in parts for run in part.runs),
        tuple(w for p in parts for w in p.warnings),
    )
