"""Finding a failed test's scripts in a checkout: test ids, printed paths and imports to files.

CI results name files as the job's machine saw them (absolute paths of another machine, paths
relative to some rootdir, dotted module names). Each is matched to the checkout by the longest
common path suffix, whole components only; a tie, or a same-named file elsewhere, is a warning
that names both. Local helper modules the scripts import from the checkout come along, so the
trace can follow calls into them.

A job names the same few files for thousands of tests (its passes too, when the history records
them): a ``Checkout`` reads each file once, and keeps what it found (matches of printed paths,
imports, helpers, the fixtures of conftests and test files) for the job; the syntax facts of a
file (its imports, its fixtures) are kept by content across jobs too, so a file is parsed once.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TypeVar

from app.analysis.gcpause import gc_paused
from app.analysis.logparse import parse_log
from app.analysis.model import Frame, Script
from app.ingest.base import TestRun

T = TypeVar("T")

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        "__pycache__",
        "site-packages",
        ".stestr",
        ".pytest_cache",
        ".mypy_cache",
        "build",
        "dist",
    }
)
MAX_INDEXED_FILES = 50_000
MAX_SCRIPT_BYTES = 5_000_000
HELPER_DEPTH = 3
_PY_IN_ID = re.compile(r"^(?P<path>[^:;\s]+\.py)(?:::|:|$)")
_IMPORT_LINE = re.compile(
    r"^\s*(?:from\s+(?P<from>[\w.]+)\s+import\s+(?P<names>[\w, ()]+)|import\s+(?P<mods>[\w., ]+))"
)
_FOREIGN = re.compile(r"(?:^|/)(?:site-packages|dist-packages|lib/python\d[\d.]*)/")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check must not block the open


@dataclass
class Checkout:
    """The Python files of one checkout, indexed by file name for suffix matching."""

    root: Path
    by_name: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # what this job found, kept for its other tests: read_checked's answers, where a printed path
    # leads, the checkout files an import names, the helpers a set of scripts imports, the
    # conftests a test file's test uses, and the conftest.py files from a test file's folder up
    _read: dict[str, tuple[str | None, str | None]] = field(default_factory=dict, repr=False, compare=False)
    _taken: dict[tuple[str, bool], tuple[str | None, list[str]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    _modules: dict[tuple[str, str, int], list[str]] = field(default_factory=dict, repr=False, compare=False)
    _helpers: dict[tuple[str, ...], list[str]] = field(default_factory=dict, repr=False, compare=False)
    _conftests: dict[tuple[str, str], list[str]] = field(default_factory=dict, repr=False, compare=False)
    _nearby: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    _facts: dict[str, _FileFacts | None] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def scan(cls, root: Path) -> Checkout:
        checkout = cls(root.resolve())
        count = 0
        for folder, dirs, files in os.walk(checkout.root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            rel = Path(folder).relative_to(checkout.root).parts
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                count += 1
                if count > MAX_INDEXED_FILES:
                    checkout.warnings.append(  # not the root's path: a service's is a temporary folder
                        f"the checkout has more than {MAX_INDEXED_FILES} Python files; "
                        "the rest were not indexed"
                    )
                    return checkout
                checkout.by_name.setdefault(name, []).append((*rel, name))
        return checkout

    def has(self, rel: str) -> bool:
        parts = tuple(PurePosixPath(rel).parts)
        return bool(parts) and parts in self.by_name.get(parts[-1], [])

    def match(self, printed: str, *, guess: bool = False) -> tuple[str | None, list[str]]:
        """The checkout file ``printed`` names (relative posix path), and warnings.

        A match needs one path to be a whole-component suffix of the other. ``guess`` marks
        candidates derived from ids (``a.b.C`` -> ``a/b/C.py``): those are silent when absent.
        """
        comps = _components(printed)
        if not comps:
            return None, []
        candidates = self.by_name.get(comps[-1], [])
        best_len, best = 0, []
        for parts in candidates:
            common = 0
            for a, b in zip(reversed(comps), reversed(parts), strict=False):
                if a != b:
                    break
                common += 1
            if common < min(len(comps), len(parts)):
                continue
            if common > best_len:
                best_len, best = common, [parts]
            elif common == best_len:
                best.append(parts)
        if not best:
            return None, []
        chosen = "/".join(best[0])
        warnings: list[str] = []
        if len(best) > 1:
            others = ", ".join("/".join(p) for p in best[1:3])
            warnings.append(
                f"{printed} is ambiguous in the checkout: {chosen} and {others} both match; using {chosen}"
            )
        elif not guess and len(candidates) > 1:
            others = ", ".join("/".join(p) for p in candidates if p != best[0])[:300]
            warnings.append(f"{printed} matched {chosen}; a same-named file is also at {others}")
        return chosen, warnings

    def facts(self, rel: str) -> _FileFacts | None:
        """The syntax facts of ``rel`` (None: unreadable, or not Python that parses), once per file."""
        if rel not in self._facts:
            content = self.read(rel)
            self._facts[rel] = None if content is None else _file_facts(content)
        return self._facts[rel]

    def read(self, rel: str) -> str | None:
        """The text of ``rel``, or None when it cannot or must not be read (``read_checked`` says why)."""
        return self.read_checked(rel)[0]

    def read_checked(self, rel: str) -> tuple[str | None, str | None]:
        """(text, None), or (None, why not). Only regular files inside the root are read, each
        once per checkout (the job's other tests get the same answer).

        The checkout is input: a ``*.py`` link to ``/proc/self/environ`` would put the job's
        environment into the outputs and the database, and a FIFO would block the reader
        forever. Links are followed only while they stay under the root, and the file type is
        checked before the file is opened and again on the open file.
        """
        found = self._read.get(rel)
        if found is None:
            found = self._read[rel] = self._read_checked(rel)
        return found

    def _read_checked(self, rel: str) -> tuple[str | None, str | None]:
        try:
            resolved = (self.root / rel).resolve(strict=True)
        except (OSError, RuntimeError, ValueError):  # missing, a link loop (RuntimeError before 3.13), NUL
            return None, "unreadable; left out"
        if not resolved.is_relative_to(self.root):
            return None, "a link to a file outside the checkout; refused"
        try:
            if not stat.S_ISREG(os.stat(resolved).st_mode):  # before open: opening a device can act
                return None, "not a regular file (a device, FIFO or socket); refused"
            fd = os.open(resolved, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except OSError as exc:
            return None, f"unreadable ({exc.strerror or 'error'}); left out"
        with os.fdopen(fd, "rb") as stream:
            info = os.fstat(stream.fileno())
            if not stat.S_ISREG(info.st_mode):  # swapped since the check above
                return None, "not a regular file (a device, FIFO or socket); refused"
            if info.st_size > MAX_SCRIPT_BYTES:
                return None, f"larger than {MAX_SCRIPT_BYTES} bytes; left out"
            try:
                data = stream.read(MAX_SCRIPT_BYTES + 1)
            except OSError as exc:
                return None, f"unreadable ({exc.strerror or 'error'}); left out"
        if len(data) > MAX_SCRIPT_BYTES:
            return None, f"larger than {MAX_SCRIPT_BYTES} bytes; left out"
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return data.decode("utf-8", "replace").replace("\x00", ""), None


def _components(path: str) -> list[str]:
    cleaned = path.strip().strip("\"'").replace("\\", "/")
    return [c for c in cleaned.split("/") if c and c not in (".", "..")]


def id_paths(test_id: str) -> list[str]:
    """Files a test id may name: ``a/b.py::T::t``, ``b.py:T.t`` (avocado), ``a.b.T.t`` (unittest)."""
    found = _PY_IN_ID.match(test_id)
    if found:
        return [found.group("path")]
    dotted = test_id.split("[", 1)[0].split(";", 1)[0].split(" ", 1)[0]
    parts = dotted.split(".")
    return [
        f"{'/'.join(parts[:n])}.py"
        for n in range(len(parts), 0, -1)
        if all(p.isidentifier() for p in parts[:n])
    ]


def find_scripts(
    run: TestRun, checkout: Checkout, *, max_files: int = 20, frames: Sequence[Frame] | None = None
) -> tuple[list[Script], list[str]]:
    """The run's scripts: the test file, the traceback's files, the conftests whose fixtures the
    test uses and the helpers all of them import (kept in this priority over ``max_files``); in
    the order of the test file, its conftests and their helpers, then the rest.

    ``frames``: the run's log's traceback frames, where the caller parsed the log already (else
    the log is parsed here for them)."""
    warnings: list[str] = []
    chosen: list[str] = []

    def take(printed: str, *, guess: bool) -> None:
        rel, w = _taken(printed, guess, checkout)
        if rel is not None and rel not in chosen:
            chosen.append(rel)
            warnings.extend(w)

    for printed in run.script_paths:
        take(printed, guess=False)
    for printed in id_paths(run.test_id):
        take(printed, guess=True)
    named = chosen[:1]  # the test's own file, as the results or the test id name it
    if frames is None:
        frames = parse_log(run.log).frames if run.log else ()
    for frame in frames:
        take(frame.path, guess=False)
    if not chosen:
        return [], warnings
    test = named or chosen[:1]  # else the first file a traceback names
    own = [c for rel in test for c in conftests(rel, run.test_id, checkout) if c != rel]
    for conftest in own:
        if conftest not in chosen:
            chosen.append(conftest)
    for helper in _helpers_of(chosen, checkout):
        if helper not in chosen:
            chosen.append(helper)
    if len(chosen) > max_files:
        warnings.append(f"{len(chosen)} files found for {run.test_id}; kept the first {max_files}")
        chosen = chosen[:max_files]
    # in the order of what the test's own files make, whatever the traceback names: the test's
    # failures share one parse of its scripts and number its code alike
    base = [*test, *own]
    base += _helpers_of(base, checkout)
    kept, first = set(chosen), set(base)
    chosen = [*(rel for rel in base if rel in kept), *(rel for rel in chosen if rel not in first)]
    scripts = []
    for rel in chosen:
        content, why = checkout.read_checked(rel)
        if content is None:
            warnings.append(f"{rel}: {why}")
            continue
        scripts.append(Script(rel, content))
    return scripts, list(dict.fromkeys(warnings))


def _taken(printed: str, guess: bool, checkout: Checkout) -> tuple[str | None, list[str]]:
    """The checkout file a printed path leads to (None: none, or one to leave out), with warnings."""
    key = (printed, guess)
    found = checkout._taken.get(key)
    if found is None:
        if _FOREIGN.search(printed.replace("\\", "/")) or _local_outside(printed, checkout.root):
            # an installed package, or a real file of this machine outside the checkout: the
            # standard library, a venv
            found = (None, [])
        else:
            found = checkout.match(printed, guess=guess)
        checkout._taken[key] = found
    return found


def conftests(test_file: str, test_id: str, checkout: Checkout) -> list[str]:
    """The ``conftest.py`` files from the test file's folder up to the root (pytest's lookup) that
    define a fixture the test uses: a parameter of the test function, ``usefixtures``, an autouse
    fixture, or one those fixtures request in turn. Nearest first; nothing outside the checkout."""
    if "conftest.py" not in checkout.by_name:
        return []
    key = (test_file, _test_name(test_id))
    found = checkout._conftests.get(key)
    if found is None:
        found = checkout._conftests[key] = _conftests(test_file, key[1], checkout)
    return list(found)


def _conftests(test_file: str, tail: str, checkout: Checkout) -> list[str]:
    candidates = checkout._nearby.get(test_file)
    if candidates is None:  # once per test file: its thousands of tests each ask for their own
        folder = PurePosixPath(test_file).parent
        candidates = checkout._nearby[test_file] = [
            rel
            for rel in (str(base / "conftest.py").removeprefix("./") for base in (folder, *folder.parents))
            if checkout.has(rel) and rel != test_file
        ]
    if not candidates:
        return []
    facts = checkout.facts(test_file)
    if facts is None:
        return []
    requested = facts.requested(tail)
    local = facts.fixtures
    defined: list[tuple[str, dict[str, _Fixture]]] = []
    for rel in candidates:
        parsed = checkout.facts(rel)
        if parsed is not None:
            defined.append((rel, parsed.fixtures))
    for _, fixtures in defined:  # autouse fixtures run for every test below their conftest
        requested |= {name for name, fixture in fixtures.items() if fixture.autouse}
    pending = list(requested)
    while pending:  # fixtures request fixtures: the nearest definition of a name is the one used
        name = pending.pop()
        fixture = local.get(name) or next((f[name] for _, f in defined if name in f), None)
        for param in fixture.params if fixture is not None else ():
            if param not in requested:
                requested.add(param)
                pending.append(param)
    return [rel for rel, fixtures in defined if requested & set(fixtures)]


@dataclass(frozen=True)
class _Fixture:
    params: tuple[str, ...]
    autouse: bool


@dataclass(frozen=True)
class _FileFacts:
    """What finding scripts reads from a file's syntax tree: its imports, its module-level
    fixtures, and the fixture names each of its test functions asks for."""

    imports: tuple[tuple[str, int], ...]
    fixtures: dict[str, _Fixture]
    marked: frozenset[str]  # the module's ``pytestmark`` usefixtures
    tests: tuple[tuple[str, frozenset[str]], ...]  # (function name, parameters and usefixtures)

    def requested(self, tail: str) -> set[str]:
        """Fixture names the test named ``tail`` asks for (``_requested``)."""
        chosen = [names for name, names in self.tests if name == tail] or [
            names for name, names in self.tests if name.startswith("test")
        ]
        found = set(self.marked)
        for names in chosen:
            found |= names
        return found - {"self", "cls"}


class _ByContent:
    """A small map from a file's content (by digest) to what was derived from it, least recently
    used evicted first: the same files come back job after job.

    One build per content at a time: a CI job finds the scripts of several tests at once (in
    threads), and the first tests of a module all asked for its facts before any had them, so
    nearly every module was parsed twice. A thread that finds the content being built waits for
    that build instead."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[bytes, object] = OrderedDict()
        self._building: dict[bytes, threading.Event] = {}
        self._lock = threading.Lock()

    def get(self, content: str, build: Callable[[str], T]) -> T:
        key = hashlib.blake2b(content.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found  # type: ignore[return-value]
            building = self._building.get(key)
            if building is None:
                building = self._building[key] = threading.Event()
                mine = True
            else:
                mine = False
        if not mine:
            building.wait()
            with self._lock:
                found = self._items.get(key)
            if found is not None:
                return found  # type: ignore[return-value]
            return build(content)  # the other build raised (or its value was evicted already)
        try:
            value = build(content)
            with self._lock:
                self._items[key] = value
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        finally:
            with self._lock:
                del self._building[key]
            building.set()
        return value


_FACTS = _ByContent(512)


def _file_facts(source: str) -> _FileFacts | None:
    """The file's facts (None where it does not parse), derived once per content."""
    found = _FACTS.get(source, _build_facts)
    return found if isinstance(found, _FileFacts) else None


def _build_facts(source: str) -> _FileFacts | bool:
    # the collector paused: a test module's syntax tree is tens of thousands of acyclic nodes that
    # it would walk (about a third of the parse) and reference counting frees, once the facts are
    # read and the tree let go (before the pause ends, or the first collection after walks it);
    # and no collection's finalizer can then switch threads halfway through building the tree,
    # which CPython 3.11's AST builder, sharing one recursion count between threads, reports as a
    # SystemError
    with gc_paused():
        return _parsed_facts(source)


def _parsed_facts(source: str) -> _FileFacts | bool:
    tree = _parse(source)
    if tree is None:
        return False  # kept too: a file that does not parse is not parsed again
    return _FileFacts(
        imports=tuple(_imports_of(tree)),
        fixtures=_fixtures(tree),
        marked=frozenset(_usefixtures([n.value for n in tree.body if _assigns_pytestmark(n)])),
        tests=tuple((function.name, _asked(function, marks)) for function, marks in _test_functions(tree)),
    )


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def _fixtures(tree: ast.Module) -> dict[str, _Fixture]:
    """Module-level ``@pytest.fixture`` functions by fixture name (``name=`` renames one)."""
    found: dict[str, _Fixture] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for decorator in node.decorator_list:
            if _decorator_name(decorator) != "fixture":
                continue
            keywords = {k.arg: k.value for k in decorator.keywords} if isinstance(decorator, ast.Call) else {}
            renamed = keywords.get("name")
            name = (
                renamed.value if isinstance(renamed, ast.Constant) and isinstance(renamed.value, str) else ""
            )
            autouse = keywords.get("autouse")
            found[name or node.name] = _Fixture(
                tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]),
                isinstance(autouse, ast.Constant) and autouse.value is True,
            )
    return found


def _test_name(test_id: str) -> str:
    """The function a test id names: its last component, parameters and variant cut off."""
    return re.split(r"::|[.:]", test_id.split("[", 1)[0].split(";", 1)[0].strip())[-1]


def _test_functions(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.expr]]]:
    """Module-level functions and the methods of module-level classes, each with the marks its
    class gives it (decorators and the class's ``pytestmark``)."""
    tests: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.expr]]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            tests.append((node, []))
        elif isinstance(node, ast.ClassDef):
            marks = [*node.decorator_list]
            marks += [n.value for n in node.body if _assigns_pytestmark(n)]
            tests.extend(
                (n, marks) for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return tests


def _asked(function: ast.FunctionDef | ast.AsyncFunctionDef, marks: list[ast.expr]) -> frozenset[str]:
    """A test function's parameters and the fixtures its own and its class's marks use."""
    args = function.args
    names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    return frozenset((*names, *_usefixtures([*function.decorator_list, *marks])))


def _assigns_pytestmark(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
    )


def _usefixtures(marks: list[ast.expr]) -> list[str]:
    names: list[str] = []
    stack = list(marks)
    while stack:
        mark = stack.pop()
        if isinstance(mark, ast.List | ast.Tuple):
            stack.extend(mark.elts)
        elif isinstance(mark, ast.Call) and _decorator_name(mark) == "usefixtures":
            names.extend(
                a.value for a in mark.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            )
    return names


def _inside(path: Path, root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError, ValueError):
        return False


def _local_outside(printed: str, root: Path) -> bool:
    """An absolute path that names an existing file of this machine outside the checkout.

    Results are hostile input: a NUL or a 5,000-character path must not raise here.
    """
    try:
        path = Path(printed)
        return path.is_absolute() and path.exists() and not _inside(path, root)
    except (OSError, ValueError):
        return False


def _helpers_of(scripts: list[str], checkout: Checkout) -> list[str]:
    """``_helpers`` once per checkout and list of scripts (a job's tests share their modules)."""
    key = tuple(scripts)
    found = checkout._helpers.get(key)
    if found is None:
        found = checkout._helpers[key] = _helpers(scripts, checkout)
    return found


def _helpers(scripts: list[str], checkout: Checkout) -> list[str]:
    """Modules the scripts import that live in the checkout, transitively to HELPER_DEPTH."""
    found: list[str] = []
    frontier = list(scripts)
    seen = set(scripts)
    for _ in range(HELPER_DEPTH):
        following: list[str] = []
        for rel in frontier:
            content = checkout.read(rel)
            if content is None:
                continue
            facts = checkout.facts(rel)
            for module, level in facts.imports if facts is not None else _imports_by_line(content):
                key = (rel, module, level)
                files = checkout._modules.get(key)
                if files is None:
                    files = checkout._modules[key] = list(_module_files(rel, module, level, checkout))
                for candidate in files:
                    if candidate not in seen:
                        seen.add(candidate)
                        found.append(candidate)
                        following.append(candidate)
        frontier = following
        if not frontier:
            break
    return found


def imports(source: str) -> list[tuple[str, int]]:
    """(module, level) for every import; ``from a import b`` yields ``a`` and ``a.b``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _imports_by_line(source)
    return _imports_of(tree)


_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _imports_of(tree: ast.Module) -> list[tuple[str, int]]:
    """The imports in ``ast.walk``'s order (breadth first), walking statements only: an import is
    a statement, and every statement's parents are statements (or handlers and match cases), so
    leaving out the expressions keeps each statement's depth and place."""
    out: list[tuple[str, int]] = []
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        # ``ast.iter_child_nodes`` filtered, without visiting the expressions: a statement (handler,
        # match case) is only ever an item of a list field (body, handlers, orelse, finalbody, cases)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                queue.extend(c for c in value if isinstance(c, _HOLDS_STATEMENTS))
        if isinstance(node, ast.Import):
            out.extend((alias.name, 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if base:
                out.append((base, node.level))
            out.extend((f"{base}.{alias.name}" if base else alias.name, node.level) for alias in node.names)
    return out


def _imports_by_line(source: str) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for line in source.splitlines():
        m = _IMPORT_LINE.match(line)
        if not m:
            continue
        if m.group("from"):
            base = m.group("from")
            out.append((base, 0))
            names = m.group("names").replace("(", " ").replace(")", " ")
            out.extend((f"{base}.{n.strip()}", 0) for n in names.split(",") if n.strip().isidentifier())
        else:
            out.extend((mod.strip().split(" ")[0], 0) for mod in m.group("mods").split(",") if mod.strip())
    return out


def _module_files(script: str, module: str, level: int, checkout: Checkout) -> Iterable[str]:
    """Checkout files for an import, looked up from the script's folder up to the root (sys.path-like)."""
    parts = [p for p in module.split(".") if p]
    if not parts:
        return []
    here = PurePosixPath(script).parent
    if level:
        bases = [here.parents[level - 2] if level > 1 and len(here.parents) >= level - 1 else here]
    else:
        bases = [here, *here.parents]
    out = []
    for base in bases:
        stem = base.joinpath(*parts)
        for candidate in (f"{stem}.py", f"{stem}/__init__.py"):
            candidate = candidate.removeprefix("./")
            if checkout.has(candidate):
                out.append(candidate)
        if out:
            break
    return out
