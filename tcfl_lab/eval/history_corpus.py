"""Build the executed corpus with CI history (docs/design.md §8.4): versions, runs, verdicts, true traces.

Per CPython ``Lib/test`` file: V0 (as shipped), V0' (three benign edits: comments, blank lines,
local renames), V1 (V0' + one mutant + 0-2 more benign edits, so the diff is no giveaway; V1
without the mutant must pass every test). Mutants sit in a test
method (R1, deterministic) or in ``setUp``/a helper that at least two chosen tests call (R2, a
natural pass/fail mix); 30 % are environment-gated (R3: the mutant is active only where
``TCFL_VARIANT=b``). Every chosen test of the file runs in every CI round, at the round's
version and environment (a: PYTHONHASHSEED=0 TZ=UTC, b: PYTHONHASHSEED=1 TZ=Europe/Berlin);
with flaky noise p in {0, 0.05, 0.15} a run is replaced by one where the tracer raised
ConnectionResetError at a random executed line. Identical executions are run once and reused
by every round that repeats them (a deterministic test gives the same log each time).

Layout: ``OUT/index.json`` (summary) and ``OUT/groups/<id>.json``, one per file and mutant:
``versions`` {label: {"id", "files": [{"path", "content"}]}}, ``logs`` and ``traces`` (deduplicated
by hash), ``runs`` (in CI order: id, round, test_id, version, env, outcome, log, trace, noise) and
``cases`` (the target failure of each failing test: run id, faulty lines in V1, regime, noise).
"""

from __future__ import annotations

import ast
import hashlib
import json
import multiprocessing
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.history.versions import version_id
from tcfl_lab.eval.corpus import (
    DISPLAY_ROOT,
    CorpusOptions,
    candidate_files,
    child_command,
    child_env,
    cpython_test_dir,
    display_log,
    log_calls,
    place_source,
    unittest_methods,
)
from tcfl_lab.eval.mutate import Mutation, mutations
from tcfl_lab.eval.units import normalize_trace

RUNNER = Path(__file__).with_name("history_runner.py")
ENVS: dict[str, dict[str, str]] = {
    "a": {"PYTHONHASHSEED": "0", "TZ": "UTC", "TCFL_VARIANT": "a"},
    "b": {"PYTHONHASHSEED": "1", "TZ": "Europe/Berlin", "TCFL_VARIANT": "b"},
}
NOISE_LEVELS = (0.0, 0.05, 0.15)
MAX_LOG = 20_000  # characters of a passing test's log: chatty tests would swell the corpus
PREFERRED = ("wrong_expected_value", "flipped_comparison", "wrong_argument", "wrong_constant")
_RUNNER_FRAME = re.compile(r'  File "[^"]*history_runner\.py", line \d+, in local\n(?:    .*\n)*?(?=\S)')


@dataclass(frozen=True)
class HistoryOptions:
    size: str = "small"
    seed: int = 0
    max_files: int = 18
    mutants_per_file: int = 6
    tests_per_file: int = 8
    rounds: tuple[int, int, int] = (16, 16, 8)  # CI rounds at V0, V0', V1
    gated_share: float = 0.3
    timeout_s: float = 20.0
    max_seconds: float = 560.0  # stop starting new files after this long (small: under 10 minutes)

    @classmethod
    def for_size(cls, size: str, seed: int = 0) -> HistoryOptions:
        if size == "small":
            return cls(size=size, seed=seed)
        if size == "full":
            return cls(size=size, seed=seed, max_files=60, mutants_per_file=8, max_seconds=7200.0)
        raise ValueError(f"size must be small or full, got {size!r}")


@dataclass
class HistorySummary:
    groups: int = 0
    cases: int = 0
    regimes: Counter[str] = field(default_factory=Counter)
    noise: Counter[str] = field(default_factory=Counter)
    files: int = 0
    executions: int = 0
    runs: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "cases": self.cases,
            "files": self.files,
            "regimes": dict(sorted(self.regimes.items())),
            "noise": dict(sorted(self.noise.items())),
            "child_runs": self.executions,
            "ci_runs": self.runs,
            "rejected_mutants": dict(sorted(self.rejected.items())),
            "seconds": round(self.seconds, 1),
        }


@dataclass(frozen=True)
class ExecutedRun:
    outcome: str
    executed: tuple[int, ...]
    output: str
    noise: bool
    seconds: float


# ---------------------------------------------------------------------------------------------
# benign edits (pure)
# ---------------------------------------------------------------------------------------------


def statement_starts(source: str) -> list[tuple[int, int]]:
    """(line, indent) of every statement start: places where a comment or blank line fits."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            text = lines[first - 1]
            out.add((first, len(text) - len(text.lstrip())))
    return sorted(out)


_COMMENTS = (
    "# keep this in sync with the fixture",
    "# checked again below",
    "# see the module docstring",
    "# the order matters here",
    "# NOTE: edge case",
)


def benign_edit(source: str, rng: random.Random, avoid: tuple[int, ...] = ()) -> tuple[str, int]:
    """Insert a comment or blank line before a random statement; (new source, inserted line)."""
    spots = [s for s in statement_starts(source) if s[0] not in avoid]
    line, indent = rng.choice(spots)
    text = "" if rng.random() < 0.3 else " " * indent + rng.choice(_COMMENTS)
    lines = source.splitlines(keepends=True)
    lines.insert(line - 1, text + "\n")
    return "".join(lines), line


def rename_local(source: str, rng: random.Random, avoid: tuple[int, ...] = ()) -> str | None:
    """Rename one local variable of one function (not holding an ``avoid`` line): a real code edit.

    Only plain ``Name`` tokens of the function are renamed (attributes and keyword arguments are
    left alone); the result must parse to the same tree up to the name, or None is returned.
    """
    tree = ast.parse(source)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    options = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef) or any(
            func.lineno <= a <= (func.end_lineno or 0) for a in avoid
        ):
            continue
        inner = [n for n in ast.walk(func) if n is not func and isinstance(n, ast.FunctionDef | ast.Lambda)]
        declared = {
            name for n in ast.walk(func) if isinstance(n, ast.Global | ast.Nonlocal) for name in n.names
        }
        stored = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        params = {a.arg for a in (*func.args.args, *func.args.kwonlyargs, *func.args.posonlyargs)}
        if not inner:
            options.extend((func, name) for name in sorted(stored - params - declared) if len(name) > 1)
    if not options:
        return None
    func, name = rng.choice(options)
    new = f"{name}_value"
    while new in taken:
        new += "_"
    lines = source.splitlines(keepends=True)
    spots = [
        (n.lineno, n.col_offset)
        for n in ast.walk(func)
        if isinstance(n, ast.Name) and n.id == name and n.lineno == n.end_lineno
    ]
    for line, col in sorted(spots, reverse=True):
        raw = lines[line - 1].encode("utf-8")
        lines[line - 1] = (raw[:col] + new.encode("utf-8") + raw[col + len(name.encode("utf-8")) :]).decode(
            "utf-8"
        )
    edited = "".join(lines)
    try:
        renamed = ast.dump(ast.parse(edited)).replace(f"'{new}'", f"'{name}'")
    except SyntaxError:
        return None
    return edited if renamed == ast.dump(tree) else None


def benign_edits(
    source: str, rng: random.Random, count: int, avoid: int | None = None
) -> tuple[str, int | None]:
    """``count`` benign edits (comments, blank lines, local renames); tracks where ``avoid`` moved."""
    for _ in range(count):
        if rng.random() < 0.4:
            renamed = rename_local(source, rng, () if avoid is None else (avoid,))
            if renamed is not None:
                source = renamed
                continue
        source, inserted = benign_edit(source, rng, () if avoid is None else (avoid,))
        if avoid is not None:
            avoid = shift(avoid, inserted)
    return source, avoid


def shift(line: int, inserted: int) -> int:
    return line + 1 if inserted <= line else line


def helpers_used_twice(source: str, tests: list[str]) -> list[str]:
    """``Class.setUp`` and helper methods/functions that at least two of ``tests`` reach."""
    tree = ast.parse(source)
    chosen = set(tests)
    out: list[str] = []
    module_funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls: Counter[str] = Counter()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {i.name: i for i in node.body if isinstance(i, ast.FunctionDef)}
        mine = [m for m in methods if f"{node.name}.{m}" in chosen]
        if "setUp" in methods and len(mine) >= 2:
            out.append(f"{node.name}.setUp")
        for name in mine:
            called = {
                n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                for n in ast.walk(methods[name])
                if isinstance(n, ast.Call)
            }
            for c in called:
                if c in methods and not c.startswith("test") and c != "setUp":
                    calls[f"{node.name}.{c}"] += 1
                elif c in module_funcs:
                    calls[c] += 1
    out.extend(sorted(n for n, count in calls.items() if count >= 2))
    return out


# ---------------------------------------------------------------------------------------------
# execution (I/O)
# ---------------------------------------------------------------------------------------------


class Executor:
    """Runs a file's tests in a child process; the same (source, env, noise) runs once."""

    def __init__(self, work: Path, options: HistoryOptions, summary: HistorySummary) -> None:
        self.work = work
        self.options = options
        self.summary = summary
        self.cache: dict[str, dict[str, ExecutedRun]] = {}

    def run(
        self, relpath: str, source: str, tests: list[str], env: str, noise: dict[str, int] | None = None
    ) -> dict[str, ExecutedRun]:
        key = hashlib.sha256(json.dumps([relpath, source, tests, env, noise or {}]).encode()).hexdigest()
        if key not in self.cache:
            self.cache[key] = self._run(relpath, source, tests, env, noise or {})
        return self.cache[key]

    def _run(
        self, relpath: str, source: str, tests: list[str], env_name: str, noise: dict[str, int]
    ) -> dict[str, ExecutedRun]:
        self.summary.executions += 1
        target = place_source(self.work, relpath, source)
        result = self.work / "result.json"
        result.unlink(missing_ok=True)
        spec = self.work / "spec.json"
        module = relpath.removesuffix(".py").replace("/", ".")
        spec.write_text(
            json.dumps(
                {"path": str(target), "module": module, "tests": tests, "result": str(result), "noise": noise}
            ),
            encoding="utf-8",
        )
        env = child_env(**ENVS[env_name])
        cwd = self.work / "cwd"
        shutil.rmtree(cwd, ignore_errors=True)
        cwd.mkdir()
        try:
            subprocess.run(
                child_command(RUNNER, spec),
                cwd=cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                timeout=self.options.timeout_s,
                check=False,
            )
            data = json.loads(result.read_text(encoding="utf-8"))
        except (subprocess.TimeoutExpired, OSError, json.JSONDecodeError):
            return {}
        out = {}
        for name, t in data["tests"].items():
            log = _RUNNER_FRAME.sub("", display_log(t["output"], self.work))
            out[name] = ExecutedRun(t["outcome"], tuple(t["executed"]), log, bool(t["noise"]), t["seconds"])
        return out


# ---------------------------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------------------------


def build_history_corpus(
    out: Path,
    options: HistoryOptions,
    *,
    jobs: int = 1,
    progress: Callable[[str], None] = lambda _: None,
) -> HistorySummary:
    """Files are built independently (each seeds its own choices), so ``jobs`` workers give the
    same corpus as one; results are taken in file order and the first ``max_files`` that yield
    groups are kept."""
    started = time.perf_counter()
    test_dir = cpython_test_dir()
    out.mkdir(parents=True, exist_ok=True)
    groups_dir = out / "groups"
    if groups_dir.exists() and any(groups_dir.iterdir()):
        raise FileExistsError(f"{out} already holds a corpus; build into an empty folder")
    groups_dir.mkdir(exist_ok=True)
    rng = random.Random(options.seed)
    files = candidate_files(test_dir, CorpusOptions())
    rng.shuffle(files)
    files.sort(key=lambda p: log_calls(p.read_text(encoding="utf-8")) == 0)
    summary = HistorySummary()
    deadline = time.time() + options.max_seconds
    for groups, part in _file_results(files, options, deadline, jobs):
        summary.executions += part.executions
        summary.rejected.update(part.rejected)
        if summary.files >= options.max_files:
            continue
        for group in groups:
            (groups_dir / f"{group['id']}.json").write_text(json.dumps(group) + "\n", encoding="utf-8")
            summary.groups += 1
            summary.cases += len(group["cases"])
            for case in group["cases"]:
                summary.regimes[case["regime"]] += 1
                summary.noise[str(group["noise"])] += 1
            summary.runs += len(group["runs"])
            progress(f"{summary.cases} cases, {summary.groups} groups: {group['id']}")
        if groups:
            summary.files += 1
    summary.seconds = time.perf_counter() - started
    (out / "index.json").write_text(json.dumps(summary.as_dict(), indent=1) + "\n", encoding="utf-8")
    return summary


_Job = tuple[Path, HistoryOptions, float]


def _one_file(job: _Job) -> tuple[list[dict[str, Any]], HistorySummary]:
    """All groups of one file, built in a scratch folder of its own (a worker's unit of work)."""
    path, options, deadline = job
    part = HistorySummary()
    if time.time() > deadline:
        return [], part
    with tempfile.TemporaryDirectory(prefix="tcfl-history-") as scratch:
        executor = Executor(Path(scratch), options, part)
        return list(_groups_from_file(path, executor, options, part)), part


def _file_results(
    files: list[Path], options: HistoryOptions, deadline: float, jobs: int
) -> Iterator[tuple[list[dict[str, Any]], HistorySummary]]:
    """Per file in order, its groups; stops once ``max_files`` files gave groups."""
    work = [(p, options, deadline) for p in files]
    found = 0
    if jobs <= 1:
        results: Iterator[tuple[list[dict[str, Any]], HistorySummary]] = map(_one_file, work)
        pool = None
    else:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap(_one_file, work, chunksize=1)
    try:
        for groups, part in results:
            yield groups, part
            found += bool(groups)
            if found >= options.max_files or time.time() > deadline:
                break
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()


def _groups_from_file(
    path: Path, executor: Executor, options: HistoryOptions, summary: HistorySummary
) -> Iterator[dict[str, Any]]:
    v0 = path.read_text(encoding="utf-8")
    relpath = f"test/{path.name}"
    rng = random.Random(f"{options.seed}:{path.name}")
    tests = unittest_methods(v0)
    rng.shuffle(tests)
    tests = sorted(tests[: options.tests_per_file])
    if len(tests) < 2:
        return
    base = executor.run(relpath, v0, tests, "a")
    tests = [
        t
        for t in tests
        if base.get(t)
        and base[t].outcome == "pass"
        and base[t].seconds < 2.0
        and len(base[t].output) < MAX_LOG
    ]
    if len(tests) < 2 or executor.run(relpath, v0, tests, "b") == {}:
        return
    v0p, _ = benign_edits(v0, rng, 3)
    clean_v0p = executor.run(relpath, v0p, tests, "a")
    if any(clean_v0p.get(t) is None or clean_v0p[t].outcome != "pass" for t in tests):
        summary.rejected["benign edit changed a verdict"] += 1
        return
    tree = ast.parse(v0p)
    scopes: list[tuple[str, str]] = [(t, "R1") for t in tests]
    scopes += [(h, "R2") for h in helpers_used_twice(v0p, tests)]
    candidates: list[tuple[Mutation, str]] = []
    for scope, regime in scopes:
        names = (scope, *_setups(scope, tree)) if regime == "R1" else (scope,)
        candidates.extend((m, regime) for m in mutations(v0p, names) if m.operator != "removed_setup_call")
    rng.shuffle(candidates)
    candidates.sort(
        key=lambda c: (c[1] != "R2", c[0].operator not in PREFERRED[:2])
    )  # shared-helper faults are the rarer kind: try them first
    made = 0
    ids: set[str] = set()
    noise_cycle = list(NOISE_LEVELS)
    for mutant, regime in candidates[: options.mutants_per_file * 6]:
        if made >= options.mutants_per_file:
            break
        gated = rng.random() < options.gated_share
        v1, moved = benign_edits(mutant.source, rng, rng.randint(0, 2), mutant.faulty_line)
        faulty = moved or mutant.faulty_line
        revert = v1.splitlines(keepends=True)
        revert[faulty - 1] = mutant.original + "\n"
        v1_off = "".join(revert)  # V1 without the fault: what environment a runs when it is gated
        off = executor.run(relpath, v1_off, tests, "a")
        if any(off.get(t) is None or off[t].outcome != "pass" for t in tests):
            summary.rejected["benign edits changed a verdict"] += 1
            continue
        fail_b = executor.run(relpath, v1, tests, "b")
        failing = [
            t
            for t in tests
            if t in fail_b and fail_b[t].outcome in ("fail", "error") and faulty in _trace(v1, fail_b[t])
        ]
        if not failing:
            summary.rejected["no failure"] += 1
            continue
        noise = noise_cycle[made % len(noise_cycle)]
        group = _group(
            path,
            relpath,
            tests,
            {"V0": v0, "V0'": v0p, "V1": v1},
            v1_off if gated else v1,
            executor,
            options,
            rng,
            noise,
        )
        if group is None:
            summary.rejected["unstable"] += 1
            continue
        label = "R3" if gated else regime
        group["id"] = _slug(f"{path.stem}-{mutant.function}-{mutant.operator}-l{faulty}")
        if group["id"] in ids:  # two mutants of one operator on one line: keep both groups
            group["id"] += f"-{sum(i.startswith(group['id']) for i in ids) + 1}"
        ids.add(group["id"])
        group["mutation"] = {
            "operator": mutant.operator,
            "function": mutant.function,
            "line": faulty,
            "original": mutant.original,
            "mutated": mutant.mutated,
            "gated": gated,
        }
        group["cases"] = _cases(group, failing, faulty, relpath, label)
        if not group["cases"]:
            summary.rejected["no target failure"] += 1
            continue
        made += 1
        yield group


def _setups(test: str, tree: ast.Module) -> tuple[str, ...]:
    cls = test.split(".")[0]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            names = {i.name for i in node.body if isinstance(i, ast.FunctionDef)}
            return tuple(f"{cls}.{n}" for n in ("setUp",) if n in names)
    return ()


def _trace(source: str, run: ExecutedRun) -> frozenset[int]:
    return normalize_trace(source, run.executed)


def _group(
    path: Path,
    relpath: str,
    tests: list[str],
    versions: dict[str, str],
    v1_env_a: str,
    executor: Executor,
    options: HistoryOptions,
    rng: random.Random,
    noise: float,
) -> dict[str, Any] | None:
    logs: dict[str, str] = {}
    traces: dict[str, list[int]] = {}
    runs: list[dict[str, Any]] = []

    def keep(source: str, r: ExecutedRun) -> tuple[str, str]:
        log_key = hashlib.sha1(r.output.encode()).hexdigest()[:16]
        logs.setdefault(log_key, r.output)
        lines = sorted(_trace(source, r))
        trace_key = hashlib.sha1(json.dumps(lines).encode()).hexdigest()[:16]
        traces.setdefault(trace_key, lines)
        return log_key, trace_key

    plan = [("V0", options.rounds[0]), ("V0'", options.rounds[1]), ("V1", options.rounds[2])]
    round_no = 0
    for label, count in plan:
        noisy_runs: dict[str, dict[str, ExecutedRun]] = {}
        for _ in range(count):
            env = "ab"[round_no % 2]
            source = v1_env_a if (label == "V1" and env == "a") else versions[label]
            clean = executor.run(relpath, source, tests, env)
            if not clean or any(t not in clean for t in tests):
                return None
            for test in tests:
                r = clean[test]
                if noise and r.outcome == "pass" and rng.random() < noise:
                    if env not in noisy_runs:  # one noisy execution per version and env, every test hit
                        # spots drawn per file, version and env: groups of one file share the execution
                        spot_rng = random.Random(
                            f"{options.seed}:{relpath}:{label}:{env}:{source.count(chr(10))}"
                        )
                        spots = {}
                        for t in tests:
                            body = sorted(_body_lines(versions[label], t) & set(clean[t].executed))
                            if body:
                                spots[t] = spot_rng.choice(body)
                        noisy_runs[env] = executor.run(relpath, source, tests, env, spots) if spots else {}
                    hit = noisy_runs[env].get(test)
                    if hit is not None and hit.noise:
                        r = hit
                log_key, trace_key = keep(versions[label], r)
                runs.append(
                    {
                        "id": len(runs),
                        "round": round_no,
                        "test_id": f"{relpath}::{test}",
                        "test": test,
                        "version": label,
                        "env": env,
                        "outcome": r.outcome,
                        "noise": r.noise,
                        "log": log_key,
                        "trace": trace_key,
                    }
                )
            round_no += 1
    return {
        "file": f"Lib/test/{path.name}",
        "path": relpath,
        "noise": noise,
        "display_root": DISPLAY_ROOT,
        "versions": {
            label: {"id": version_id({relpath: text}), "files": [{"path": relpath, "content": text}]}
            for label, text in versions.items()
        },
        "tests": tests,
        "logs": logs,
        "traces": traces,
        "runs": runs,
    }


def _body_lines(source: str, test: str) -> set[int]:
    cls, _, name = test.partition(".")
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return set(range(item.body[0].lineno, (item.end_lineno or item.lineno) + 1))
    return set()


def _cases(group: dict[str, Any], failing: list[str], faulty: int, relpath: str, regime: str) -> list[dict]:
    out = []
    for test in failing:
        target = next(
            (
                r
                for r in group["runs"]
                if r["test"] == test
                and r["version"] == "V1"
                and r["outcome"] in ("fail", "error")
                and not r["noise"]
            ),
            None,
        )
        if target is None:
            continue
        out.append(
            {
                "id": f"{group['id']}--{_slug(test)}",
                "test": test,
                "target_run": target["id"],
                "faulty_lines": [{"path": relpath, "line": faulty}],
                "regime": regime,
            }
        )
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()
