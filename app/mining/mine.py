"""`tcfl corpus mine`: read a local git clone and write one benchmark case per logged fix of test code.

No network: only ``git`` over the clone given (a work tree or a bare repository). Commits are read
oldest first so that, of a fix and its cherry-picks or backports (same ``git patch-id``), the
original is kept. Progress is saved after every commit in ``.mine-state.json`` in the output
folder: a second run with the same arguments continues where the first stopped.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.analysis.logparse import match_script_path
from app.mining.extract import (
    DEFAULT_TEST_GLOBS,
    FixFacts,
    case_id,
    faulty_lines,
    find_log,
    fix_nature,
    grade,
    is_python,
    is_test_path,
    log_frames,
    parse_unified_diff,
)

STATE = ".mine-state.json"
SUMMARY = ".mine-summary.json"
MAX_FILE_BYTES = 1_000_000  # a larger "script" is generated data, not test code
MAX_FAULTY_FILES = 8
MAX_CONTEXT_FILES = 8
_NOT_CODE = (".md", ".rst", ".txt", ".yaml", ".yml", ".json", ".cfg", ".ini", ".toml")


class MineError(Exception):
    """The clone cannot be read (not a git repository, git missing)."""


@dataclass(frozen=True)
class MineOptions:
    since: str | None = None  # anything ``git log --since`` takes
    paths: tuple[str, ...] = DEFAULT_TEST_GLOBS  # what counts as test code
    revs: tuple[str, ...] = ("--all",)
    repo_name: str | None = None  # owner/name; inferred from the clone when None
    max_cases: int | None = None


@dataclass
class MineReport:
    kept: Counter[str] = field(default_factory=Counter)  # by confidence
    dropped: Counter[str] = field(default_factory=Counter)  # by reason
    candidates: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "kept": dict(self.kept), "dropped": dict(self.dropped)}


class Git:
    """The few git commands mining needs, over one clone."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        try:
            out = self.run("rev-parse", "--git-dir")
        except (OSError, subprocess.CalledProcessError) as exc:
            raise MineError(f"{repo} is not a git repository") from exc
        if not out.strip():
            raise MineError(f"{repo} is not a git repository")

    def run(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.repo), *args],
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            check=True,
        )
        return done.stdout.decode("utf-8", errors="replace")

    def show(self, rev: str, path: str, _hops: int = 0) -> str | None:
        """A file's text at a revision (a symbolic link followed); None when absent, binary or too large."""
        try:
            mode = self.run("ls-tree", rev, "--", path).split(" ", 1)[0]
        except subprocess.CalledProcessError:
            return None
        if mode == "120000" and _hops < 4:
            target = self.run("cat-file", "blob", f"{rev}:{path}").strip()
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
            return None if resolved.startswith("..") else self.show(rev, resolved, _hops + 1)
        try:
            size = int(self.run("cat-file", "-s", f"{rev}:{path}").strip())
        except (subprocess.CalledProcessError, ValueError):
            return None
        if size > MAX_FILE_BYTES:
            return None
        data = subprocess.run(
            ["git", "-C", str(self.repo), "cat-file", "blob", f"{rev}:{path}"],
            capture_output=True,
            check=False,
        ).stdout
        if b"\0" in data[:8000]:
            return None
        return data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    date: str
    message: str


def _commits(git: Git, options: MineOptions) -> list[Commit]:
    args = ["log", *options.revs, "--no-merges", "--reverse", "--format=%H%x1f%P%x1f%aI%x1f%B%x1e"]
    if options.since:
        args.append(f"--since={options.since}")
    out: list[Commit] = []
    for record in git.run(*args).split("\x1e"):
        record = record.lstrip("\n")
        if not record:
            continue
        sha, parents, date, message = record.split("\x1f", 3)
        if not parents.strip():
            continue  # a root commit fixes nothing
        out.append(Commit(sha, parents.split()[0], date, message.strip("\n")))
    return out


def repo_name(git: Git, given: str | None) -> str:
    """owner/name: as given, else from the origin URL, else from a folder named ``owner+name``."""
    if given:
        return given
    try:
        url = git.run("config", "--get", "remote.origin.url").strip()
    except subprocess.CalledProcessError:
        url = ""
    m = re.search(r"[:/]([\w.-]+)/([\w.-]+?)(?:\.git)?/?$", url)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    for part in reversed(git.repo.resolve().parts):
        if "+" in part:
            owner, _, name = part.partition("+")
            return f"{owner}/{name}"
    return git.repo.resolve().name


_LICENCES = (
    ("Apache License", "Apache-2.0"),
    ("GNU LESSER GENERAL PUBLIC LICENSE", "LGPL"),
    ("GNU LIBRARY GENERAL PUBLIC LICENSE", "LGPL-2.0"),
    ("GNU AFFERO GENERAL PUBLIC LICENSE", "AGPL-3.0"),
    ("Version 3, 29 June 2007", "GPL-3.0"),
    ("Version 2, June 1991", "GPL-2.0"),
    ("Permission is hereby granted, free of charge", "MIT"),
    ("Redistribution and use in source and binary forms", "BSD"),
    ("Mozilla Public License", "MPL-2.0"),
    ("SCYLLADB SOFTWARE LICENSE AGREEMENT", "LicenseRef-ScyllaDB-Source-Available"),
)
# Licences under which a case (the test files it copies) may be kept in a corpus that others clone.
OPEN_LICENCES = (
    "Apache-2.0",
    "MIT",
    "BSD",
    "GPL-2.0",
    "GPL-3.0",
    "LGPL-2.0",
    "LGPL-2.1",
    "LGPL-3.0",
    "AGPL-3.0",
    "MPL-2.0",
)
_LICENCE_FILE = re.compile(r"(?i)(licen[cs]e|copying)([.-]\w+)*$")
_LICENCE_READ = 64_000  # a licence text may follow a preamble of the project's own (udisks' COPYING)


def is_open(licence: str) -> bool:
    """Every licence named is an open-source one (a REUSE layout names several)."""
    parts = [p for p in licence.split(" AND ") if p]
    return bool(parts) and all(any(p.startswith(o) for o in (*OPEN_LICENCES, "CC-BY")) for p in parts)


def licence_text(text: str) -> str | None:
    """The licence a licence file's text names (SPDX-like), or None: the title found first wins (GPLv3's
    body names the AGPL; a project's own preamble may come before the licence), as the licence spells it
    (a preamble's "GNU Library General Public License" in prose is no title) or else in any case."""
    head = text[:_LICENCE_READ]
    for folded, fold in ((head, str), (head.lower(), str.lower)):
        found = [(at, needle, spdx) for needle, spdx in _LICENCES if (at := folded.find(fold(needle))) >= 0]
        if found:
            at, needle, spdx = min(found)
            title = folded[max(0, at - 120) : at].lower()  # the title over a GPL's version line
            if spdx.startswith("GPL") and "lesser general public license" in title:
                spdx = "LGPL"
            elif spdx.startswith("GPL") and "affero general public license" in title:
                return "AGPL-3.0"
            if spdx == "LGPL":
                return "LGPL-3.0" if "version 3" in folded[at : at + len(needle) + 80].lower() else "LGPL-2.1"
            return spdx
    return None


def licence(git: Git, rev: str, cache: dict[str, str] | None = None, paths: Sequence[str] = ()) -> str:
    """The licence at ``rev`` (SPDX-like) of the repository, or 'unknown': the root's licence file (or
    REUSE ``LICENSES/`` folder), else the licence files nearest to ``paths`` (a repository of components,
    each with its own). A repository may change its licence, so each fix is read at its own commit
    (``cache`` keyed by the licence files' blobs)."""
    cache = {} if cache is None else cache
    found = _folder_licence(git, rev, "", cache)
    if found != "unknown" or not paths:
        return found
    per_file: set[str] = set()
    for path in paths:
        folder = posixpath.dirname(path)
        while folder:
            here = _folder_licence(git, rev, folder, cache)
            if here != "unknown":
                per_file.add(here)
                break
            folder = posixpath.dirname(folder)
    return " AND ".join(sorted(per_file)) if per_file else "unknown"


def _folder_licence(git: Git, rev: str, folder: str, cache: dict[str, str]) -> str:
    try:
        listing = git.run("ls-tree", rev, *(["--", f"{folder}/"] if folder else [])).split("\n")
    except subprocess.CalledProcessError:
        return "unknown"
    entries = [line.split("\t", 1) for line in listing if "\t" in line]
    files = [(meta.split()[2], n) for meta, n in entries if _LICENCE_FILE.match(posixpath.basename(n))]
    reuse = [meta.split()[2] for meta, n in entries if posixpath.basename(n) == "LICENSES" and "tree" in meta]
    key = " ".join(sorted(blob for blob, _ in files) + reuse)
    if not key:
        return "unknown"
    if key in cache:
        return cache[key]
    found = "unknown"
    for _, name in sorted(files, key=lambda f: f[1]):
        spdx = licence_text(git.show(rev, name) or "")
        if spdx is not None:
            found = spdx
            break
    if found == "unknown" and reuse:  # the REUSE layout: one file per licence, named by its SPDX id
        ids = [Path(n).stem for n in git.run("ls-tree", "--name-only", reuse[0]).split("\n") if n]
        if ids:
            found = " AND ".join(sorted(ids))
    cache[key] = found
    return found


def _changed(git: Git, commit: Commit) -> list[tuple[str, str]]:
    """(status, path in the fixed version) of the files a commit changed, renames followed."""
    out = git.run("diff-tree", "-r", "-M", "--no-commit-id", "--name-status", commit.parent, commit.sha)
    changed = []
    for line in out.split("\n"):
        if not line.strip():
            continue
        fields = line.split("\t")
        changed.append((fields[0], fields[-1]))
    return changed


def _patch_id(git: Git, commit: Commit) -> str:
    diff = git.run("diff-tree", "-p", "-M", commit.parent, commit.sha)
    out = git.run("patch-id", "--stable", stdin=diff).split()
    return out[0] if out else commit.sha


def mine_commit(
    git: Git, commit: Commit, options: MineOptions, repo: str, licences: dict[str, str] | None = None
) -> tuple[dict | None, str]:
    """One commit's case, or None and the reason it was dropped (``licences``: a cache across commits)."""
    cut = find_log(commit.message)
    if cut is None:
        return None, "no failure log in the message"
    changed = _changed(git, commit)
    tests: list[str] = []
    product: list[str] = []
    product_data = False  # a data file outside the tests changed (a schema, a config): product, maybe
    for status, path in changed:
        head = None if path.endswith(".py") or "." in path.rsplit("/", 1)[-1] else git.show(commit.sha, path)
        python = is_python(path, head)
        if python and is_test_path(path, options.paths):
            if not status.startswith("D"):
                tests.append(path)
        elif is_test_path(path):
            continue  # test code outside the globs mined (a test runner at the root)
        elif path.endswith(_NOT_CODE):
            product_data = product_data or not path.endswith((".md", ".rst", ".txt"))
        else:
            product.append(path)
    if not tests:
        return None, "no test code changed"
    diff = git.run("diff", "-M", "-U0", commit.parent, commit.sha, "--", *tests)
    hunks = [h for h in parse_unified_diff(diff) if h.removed or h.insertions]
    if not hunks:
        return None, "the fix only adds new test files"
    if len(hunks) > MAX_FAULTY_FILES:
        return None, f"fix spans more than {MAX_FAULTY_FILES} test files"
    faulty_text: dict[str, str] = {}
    fixed_text: dict[str, str] = {}
    lines = []
    for h in hunks:
        text = git.show(commit.parent, h.path)
        if text is None:
            continue
        faulty_text[h.path] = text
        lines.extend(faulty_lines(h, text))
        fixed = git.show(commit.sha, h.new_path)
        if fixed is not None:
            fixed_text[h.path] = fixed
    if not lines:
        return None, "no faulty line in the faulty version"
    frames = log_frames(cut.text)
    context: dict[str, str] = {}
    if frames:
        tree = git.run("ls-tree", "-r", "--name-only", commit.parent).split("\n")
        pythons = [p for p in tree if p.endswith(".py")]
        for frame in frames:
            path = match_script_path(frame.path, pythons)
            if path is None or path in faulty_text or path in context or len(context) >= MAX_CONTEXT_FILES:
                continue
            # a frame names a helper only when more than its file name matches (``__init__.py`` is everywhere)
            if path.count("/") and len(frame.path.replace("\\", "/").split("/")) > 1:
                tail = "/".join(path.split("/")[-2:])
                if not frame.path.replace("\\", "/").endswith(tail):
                    continue
            text = git.show(commit.parent, path)
            if text is not None:
                context[path] = text
    nature = fix_nature(diff)
    added_tests = re.findall(r"^\+\s*(?:async\s+)?def (test\w*)", diff, re.M)
    if (product or product_data) and added_tests and all(h.insertions and not h.removed for h in hunks):
        return None, "the fix changes product code and only adds tests"
    if nature in {"the fix only changes comments or layout", "the fix commits merge-conflict markers"}:
        return None, nature
    changed_lines = sum(len(h.removed) + h.added for h in hunks)
    g = grade(
        FixFacts(
            log=cut,
            frames=frames,
            faulty_files=faulty_text,
            fixed_files=fixed_text,
            changed_lines=changed_lines,
            product_files=tuple(product),
            faulty_count=len(lines),
            nature=nature,
            message=commit.message,
            context_files=context,
            diff=diff,
        )
    )
    if g.other_version is not None:
        return None, g.other_version.split(":", 1)[0]
    subject = commit.message.split("\n", 1)[0]
    files = [{"path": p, "content": t, "role": "faulty"} for p, t in faulty_text.items()]
    files += [{"path": p, "content": t, "role": "context"} for p, t in context.items()]
    insertion_only = all(line.kind == "insertion_point" for line in lines)
    case: dict[str, Any] = {
        "id": case_id(repo, commit.sha, subject),
        "repo": repo,
        "fix_commit": commit.sha,
        "faulty_commit": commit.parent,
        "fix_subject": subject,
        "fix_author_date": commit.date,
        "test_files": files,
        "failure_log": cut.text,
        "failure_log_source": f"verbatim excerpt of the fix commit message (from its line {cut.first_line})",
        "faulty_lines": [line.to_dict() for line in lines],
        "fix_diff": diff,
        "confidence": g.confidence,
        "confidence_reasons": list(g.reasons),
        "licence": _case_licence(git, commit, list(faulty_text), licences),
    }
    if insertion_only:
        case["insertion_only"] = True
    return case, ""


def _case_licence(git: Git, commit: Commit, paths: list[str], cache: dict[str, str] | None) -> str:
    """The licence of the case's files at the fix commit, else at the head (a licence file added later
    covers the project's earlier commits too)."""
    found = licence(git, commit.sha, cache, paths)
    return found if found != "unknown" else licence(git, "HEAD", cache, paths)


def mine(
    repo_dir: Path,
    out: Path,
    options: MineOptions = MineOptions(),
    *,
    progress: Callable[[int, int, MineReport], None] | None = None,
) -> MineReport:
    """Mine ``repo_dir`` into ``out`` (one ``<id>.json`` per case), continuing an earlier run there."""
    git = Git(repo_dir)
    repo = repo_name(git, options.repo_name)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / STATE
    state: dict[str, Any] = {"done": {}, "patch_ids": {}}
    if state_path.is_file():
        state = json.loads(state_path.read_text())
    commits = [c for c in _commits(git, options) if find_log(c.message) is not None]
    report = MineReport(candidates=len(commits))
    for reason in state["done"].values():
        if reason.startswith("kept:"):
            report.kept[reason[5:]] += 1
        else:
            report.dropped[reason] += 1
    licences: dict[str, str] = {}
    for index, commit in enumerate(commits):
        if commit.sha in state["done"]:
            continue
        if options.max_cases is not None and sum(report.kept.values()) >= options.max_cases:
            break
        outcome = _one(git, commit, options, repo, licences, out, state)
        state["done"][commit.sha] = outcome
        if outcome.startswith("kept:"):
            report.kept[outcome[5:]] += 1
        else:
            report.dropped[outcome] += 1
        state_path.write_text(json.dumps(state))
        if progress is not None:
            progress(index + 1, len(commits), report)
    (out / SUMMARY).write_text(json.dumps({"repo": repo, **report.to_dict()}, indent=2) + "\n")
    return report


def _one(
    git: Git,
    commit: Commit,
    options: MineOptions,
    repo: str,
    licences: dict[str, str],
    out: Path,
    state: dict,
) -> str:
    try:
        pid = _patch_id(git, commit)
    except subprocess.CalledProcessError:
        return "git could not diff the commit"
    if pid in state["patch_ids"]:
        return "same patch as an earlier commit (cherry-pick or backport)"
    state["patch_ids"][pid] = commit.sha
    try:
        case, reason = mine_commit(git, commit, options, repo, licences)
    except subprocess.CalledProcessError as exc:
        return f"git failed: {exc.cmd[3] if len(exc.cmd) > 3 else exc.cmd}"
    if case is None:
        return reason
    # a backport rebased onto other code has another patch id but fixes the same lines the same way; a
    # squashed series or another patch set of one review quotes the same log
    same = json.dumps([case["fix_subject"], [(f["path"], f["text"]) for f in case["faulty_lines"]]])
    if same in state.setdefault("fixes", {}):
        return "same fix as an earlier commit (same subject and faulty lines)"
    log_key = hashlib.sha256(" ".join(case["failure_log"].split()).encode()).hexdigest()
    if log_key in state.setdefault("logs", {}):
        return "same failure log as an earlier commit"
    state["fixes"][same] = commit.sha
    state["logs"][log_key] = commit.sha
    (out / f"{case['id']}.json").write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    return f"kept:{case['confidence']}"


def summary_lines(report: MineReport) -> Sequence[str]:
    """The summary printed at the end: what was kept, and why the rest was dropped."""
    kept = sum(report.kept.values())
    lines = [
        f"{report.candidates} commits with a failure log in the message; kept {kept} "
        f"({', '.join(f'{k} {v}' for k, v in sorted(report.kept.items())) or 'none'})"
    ]
    for reason, n in report.dropped.most_common():
        lines.append(f"  dropped {n}: {reason}")
    return lines
