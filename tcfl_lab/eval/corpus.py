"""Build an executed corpus: real test files, one injected fault each, the true trace recorded.

Source: CPython's own test suite as shipped with the interpreter (``Lib/test``). For each chosen
test method the original must pass quickly; then single-fault mutants of the method (and its
class's ``setUp``) run in a child process under a line tracer restricted to the test file, with
logging, stdout and stderr captured together as the failure log. Mutants that fail become
benchmark cases (docs/design.md §3) with ``actual_trace`` in the analysis' units.

This module does I/O (files, subprocesses); the mutation operators (mutate.py) and the trace
normalisation (units.py) are pure.
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcfl_lab.eval.mutate import OPERATORS, Mutation, mutations
from tcfl_lab.eval.units import normalize_trace

RUNNER = Path(__file__).with_name("corpus_runner.py")
DISPLAY_ROOT = "/usr/lib/python3.11"  # where the logs say the files live, whatever the build host
_LOG_LEVELS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_AVOID = re.compile(
    r"socket|subprocess|script_helper|multiprocessing|concurrent|asyncio|tkinter|curses|ssl\b|"
    r"urllib|http\.|signal\.|faulthandler|os\.fork|requires_resource|bigmemtest|ctypes|"
    r"threading_helper|interpreters|getpass|input\(|pty|tty|winreg|msvcrt|zipimport"
)


@dataclass(frozen=True)
class CorpusOptions:
    max_cases: int = 200
    seed: int = 0
    min_lines: int = 60
    max_lines: int = 600
    per_file: int = 10
    per_test: int = 2
    tests_per_file: int = 8
    mutants_per_test: int = 6
    max_test_seconds: float = 2.0
    timeout_s: float = 20.0
    # an operator that nearly always fails (flipped asserts) may not crowd out the rest
    max_operator_share: float = 0.3

    def operator_cap(self) -> int:
        return max(1, math.ceil(self.max_operator_share * self.max_cases))


@dataclass(frozen=True)
class RunOutcome:
    status: str
    outcomes: dict[str, dict[str, Any]]
    executed: tuple[int, ...]
    output: str
    seconds: float


@dataclass
class CorpusSummary:
    cases: int = 0
    files: Counter[str] = field(default_factory=Counter)
    operators: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "test_files": len(self.files),
            "cases_per_file": dict(sorted(self.files.items())),
            "operators": dict(sorted(self.operators.items())),
            "outcomes": dict(sorted(self.outcomes.items())),
            "child_runs": self.runs,
            "rejected_mutants": dict(sorted(self.rejected.items())),
            "seconds": round(self.seconds, 1),
        }


def cpython_test_dir() -> Path:
    """Where this interpreter's ``Lib/test`` lives; an error if the build did not ship it."""
    path = Path(sysconfig.get_paths()["stdlib"]) / "test"
    if not (path / "support" / "__init__.py").is_file():
        raise FileNotFoundError(f"CPython's test suite is not installed next to this interpreter ({path})")
    return path


def candidate_files(test_dir: Path, options: CorpusOptions) -> list[Path]:
    """Single-file unittest modules of a moderate size that need no network, processes or GUI."""
    chosen = []
    for path in sorted(test_dir.glob("test_*.py")):
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        size_ok = options.min_lines <= source.count("\n") <= options.max_lines
        if size_ok and "unittest" in source and not _AVOID.search(source):
            chosen.append(path)
    return chosen


def log_calls(source: str) -> int:
    """How many print/logging calls a file makes: files that log come first in the corpus."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "print") or (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in ("logging", "logger", "log", "LOG")
                and func.attr in _LOG_LEVELS
            ):
                count += 1
    return count


def unittest_methods(source: str) -> list[str]:
    """``Class.method`` for every test method of every class in the module."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            found.extend(
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef) and item.name.startswith("test")
            )
    return found


def place_source(work: Path, relpath: str, source: str) -> Path:
    """Write a mutated module where the child imports it, with no cached bytecode beside it.

    A mutant often has the same size as the file before it and is written within the same
    second; a leftover ``__pycache__`` entry then matches both and the child runs the old code.
    """
    target = work / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target.parent / "__pycache__", ignore_errors=True)
    target.write_text(source, encoding="utf-8")
    return target


def child_env(**extra: str) -> dict[str, str]:
    """The child's environment: no inherited PYTHON* settings, no bytecode written, no proxies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1", NO_PROXY="*", http_proxy="", https_proxy="")
    env.update(extra)
    return env


def child_command(runner: Path, spec_path: Path) -> list[str]:
    """``-B``: mutated modules must never leave (or be read back as) stale bytecode."""
    return [sys.executable, "-B", "-X", "utf8", str(runner), str(spec_path)]


def run_tests(
    work: Path, relpath: str, source: str, tests: list[str], *, trace: bool, timeout_s: float
) -> RunOutcome:
    """Run the named tests of ``source`` (placed at ``work/relpath``) in a child interpreter."""
    target = place_source(work, relpath, source)
    result_path = work / "result.json"
    result_path.unlink(missing_ok=True)
    spec_path = work / "spec.json"
    module = relpath.removesuffix(".py").replace("/", ".")
    spec = {"path": str(target), "module": module, "tests": tests, "result": str(result_path), "trace": trace}
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    env = child_env(PYTHONHASHSEED="0")
    cwd = work / "cwd"  # fresh for every run: files a test leaves behind cannot change the next one
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir()
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            child_command(RUNNER, spec_path),
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return RunOutcome("timeout", {}, (), "", time.perf_counter() - started)
    seconds = time.perf_counter() - started
    output = proc.stdout.decode("utf-8", errors="replace")
    try:
        data = json.loads(result_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return RunOutcome(f"no result (exit {proc.returncode})", {}, (), output, seconds)
    return RunOutcome(data["status"], data["outcomes"], tuple(data["executed"]), output, seconds)


def display_log(output: str, work: Path) -> str:
    """The log as a CI job would show it: stable install paths instead of scratch folders."""
    stdlib = sysconfig.get_paths()["stdlib"]
    return output.replace(str(work), DISPLAY_ROOT).replace(stdlib, DISPLAY_ROOT)


def _unique(case_id: str, taken: set[str]) -> str:
    """Two mutants of one line with one operator (both arguments of an assert) get distinct ids."""
    candidate, n = case_id, 1
    while candidate in taken:
        n += 1
        candidate = f"{case_id}-{n}"
    taken.add(candidate)
    return candidate


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _scope(test: str, source_tests: ast.Module) -> tuple[str, ...]:
    cls = test.split(".")[0]
    for node in source_tests.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
            return (test, *(f"{cls}.{n}" for n in ("setUp", "setUpClass") if n in names))
    return (test,)


def _pick_mutants(
    found: list[Mutation], rng: random.Random, limit: int, made: Counter[str]
) -> list[Mutation]:
    """Round-robin over operators, the least used so far first, so none crowds out the others."""
    by_op: dict[str, list[Mutation]] = {}
    for m in found:
        by_op.setdefault(m.operator, []).append(m)
    for items in by_op.values():
        rng.shuffle(items)
    ops = [op for op in OPERATORS if op in by_op]
    rng.shuffle(ops)
    ops.sort(key=lambda op: made[op])
    picked: list[Mutation] = []
    while len(picked) < limit and any(by_op[op] for op in ops):
        for op in ops:
            if by_op[op] and len(picked) < limit:
                picked.append(by_op[op].pop())
    return picked


def build_corpus(
    out: Path, options: CorpusOptions, *, progress: Callable[[str], None] = lambda _: None
) -> CorpusSummary:
    """Write up to ``max_cases`` case files into ``out``; returns what was done."""
    started = time.perf_counter()
    test_dir = cpython_test_dir()
    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("*.json")):
        raise FileExistsError(f"{out} already holds case files; build into an empty folder")
    taken: set[str] = set()
    rng = random.Random(options.seed)
    files = candidate_files(test_dir, options)
    rng.shuffle(files)
    files.sort(key=lambda p: log_calls(p.read_text(encoding="utf-8")) == 0)  # stable: loggers first
    summary = CorpusSummary()
    version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    with tempfile.TemporaryDirectory(prefix="tcfl-corpus-") as scratch:
        work = Path(scratch)
        for path in files:
            if summary.cases >= options.max_cases:
                break
            for case in _cases_from_file(path, work, options, summary, version):
                case["id"] = _unique(case["id"], taken)
                (out / f"{case['id']}.json").write_text(json.dumps(case, indent=1) + "\n", encoding="utf-8")
                summary.cases += 1
                summary.files[case["test_files"][0]["path"]] += 1
                summary.operators[case["mutation"]["operator"]] += 1
                summary.outcomes[case["source"]["outcome"]] += 1
                progress(f"{summary.cases}/{options.max_cases} {case['id']}")
                if summary.cases >= options.max_cases:
                    break
    summary.seconds = time.perf_counter() - started
    (out / "index.json").write_text(json.dumps(summary.as_dict(), indent=1) + "\n", encoding="utf-8")
    return summary


def _cases_from_file(
    path: Path, work: Path, options: CorpusOptions, summary: CorpusSummary, version: str
) -> Iterator[dict[str, Any]]:
    source = path.read_text(encoding="utf-8")
    relpath = f"test/{path.name}"
    tests = unittest_methods(source)
    rng = random.Random(f"{options.seed}:{path.name}")  # per file: choices elsewhere do not shift it
    rng.shuffle(tests)
    tests = sorted(tests[: options.tests_per_file])
    if not tests:
        return
    baseline = run_tests(work, relpath, source, tests, trace=False, timeout_s=options.timeout_s)
    summary.runs += 1
    passing = [
        t
        for t in tests
        if baseline.outcomes.get(t, {}).get("outcome") == "pass"
        and baseline.outcomes[t]["seconds"] < options.max_test_seconds
    ]
    rng.shuffle(passing)
    tree = ast.parse(source)
    made = 0
    for test in passing:
        found = mutations(source, _scope(test, tree))
        kept_here = 0
        picker = random.Random(f"{options.seed}:{path.name}:{test}")
        for mutant in _pick_mutants(found, picker, options.mutants_per_test, summary.operators):
            if kept_here >= options.per_test or made >= options.per_file:
                break
            if summary.operators[mutant.operator] >= options.operator_cap():
                continue
            run = run_tests(work, relpath, mutant.source, [test], trace=True, timeout_s=options.timeout_s)
            summary.runs += 1
            outcome = run.outcomes.get(test, {}).get("outcome")
            if run.status != "ok" or outcome not in ("fail", "error"):
                summary.rejected[outcome or run.status.split(":")[0]] += 1
                continue
            case = _case(path, relpath, test, mutant, run, work, outcome, version)
            if not {(f["path"], f["line"]) for f in case["faulty_lines"]} <= {
                (t["path"], t["line"]) for t in case["actual_trace"]
            }:
                # the mutated line never ran: the failure is not this fault's (a flaky test, say)
                summary.rejected["fault not executed"] += 1
                continue
            kept_here += 1
            made += 1
            yield case
        if made >= options.per_file:
            return


def _case(
    path: Path,
    relpath: str,
    test: str,
    mutant: Mutation,
    run: RunOutcome,
    work: Path,
    outcome: str,
    version: str,
) -> dict[str, Any]:
    trace = normalize_trace(mutant.source, run.executed)
    module = relpath.removesuffix(".py").replace("/", ".")
    return {
        "id": _slug(f"cpython-{path.stem}-{test}-{mutant.operator}-l{mutant.faulty_line}"),
        "test_files": [{"path": relpath, "content": mutant.source}],
        "failure_log": display_log(run.output, work),
        "faulty_lines": [{"path": relpath, "line": mutant.faulty_line}],
        "actual_trace": [{"path": relpath, "line": n} for n in sorted(trace)],
        "source": {
            "suite": "cpython Lib/test",
            "python": version,
            "file": f"Lib/test/{path.name}",
            "test": f"{module}.{test}",
            "command": f"python -m unittest -v {module}.{test}",
            "outcome": outcome,
            "seconds": round(run.seconds, 3),
        },
        "mutation": {
            "operator": mutant.operator,
            "function": mutant.function,
            "original_line": mutant.line,
            "original": mutant.original,
            "mutated": mutant.mutated,
        },
        "actual_trace_note": "tracer lines normalised to trace units (tcfl_lab/eval/units.py)",
    }
