"""`tcfl corpus mine` over a real git repository built by the test: cases, dedup, resume, summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.cli import main
from app.mining.mine import STATE, SUMMARY, MineOptions, licence_text, mine
from tcfl_lab.eval.cases import load_cases

HELPER = "def expected_total():\n    return 4\n"
TEST = """\
from helpers import expected_total


def test_total():
    cart = [1, 2]
    assert sum(cart) == expected_total()
"""
LOG = """\
Traceback (most recent call last):
  File "/ci/work/suite/tests/test_cart.py", line 6, in test_total
    assert sum(cart) == expected_total()
AssertionError: 3 != 4"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "T",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "T",
            "GIT_COMMITTER_EMAIL": "t@example.com",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00",
            "GIT_COMMITTER_DATE": "2024-01-01T00:00:00",
            "HOME": str(repo),
            "PATH": "/usr/bin:/bin",
        },
    ).stdout


def commit(repo: Path, files: dict[str, str], msg: str) -> str:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "suite"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    commit(r, {"tests/helpers.py": HELPER, "tests/test_cart.py": TEST, "src/cart.c": "int x;\n"}, "initial")
    commit(r, {"tests/helpers.py": HELPER.replace("4", "5")}, "tests: tweak\n\nNo log here.")
    commit(
        r,
        {"tests/helpers.py": HELPER.replace("4", "3")},
        f"tests: expected total counted the discount twice\n\nCI failed:\n\n{LOG}\n\nSigned-off-by: T <t@e>",
    )
    commit(r, {"src/cart.c": "int y;\n"}, f"cart: fix the product\n\n{LOG.replace('test_cart', 'other')}")
    return r


def test_mine_writes_one_case_per_logged_fix(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "cases"
    report = mine(repo, out, MineOptions(repo_name="org/suite"))
    assert report.candidates == 2
    assert sum(report.kept.values()) == 1
    assert report.dropped == {"no test code changed": 1}
    (path,) = out.glob("suite-*.json")
    case = json.loads(path.read_text())
    assert case["repo"] == "org/suite"
    assert case["failure_log"] == LOG
    assert case["faulty_lines"] == [
        {"path": "tests/helpers.py", "line": 2, "text": "    return 5", "kind": "modified_or_removed"}
    ]
    roles = {f["path"]: f["role"] for f in case["test_files"]}
    assert roles == {"tests/helpers.py": "faulty", "tests/test_cart.py": "context"}
    helper = next(f for f in case["test_files"] if f["path"] == "tests/helpers.py")
    assert helper["content"] == HELPER.replace("4", "5")  # the faulty version, not the fix
    assert case["fix_subject"] == "tests: expected total counted the discount twice"
    assert case["confidence"] in {"high", "medium", "low"} and case["confidence_reasons"]
    # the case loads as a benchmark case
    cases, problems = load_cases(out)
    assert problems == [] and len(cases) == 1
    assert json.loads((out / SUMMARY).read_text())["kept"] == report.kept


def test_cherry_picks_are_kept_once_and_a_second_run_resumes(repo: Path, tmp_path: Path) -> None:
    fix = git(repo, "log", "--format=%H", "--grep", "discount").split()[0]
    git(repo, "checkout", "-q", "-b", "stable", "HEAD~2")
    git(repo, "cherry-pick", "-x", fix)
    out = tmp_path / "cases"
    first = mine(repo, out, MineOptions())
    assert sum(first.kept.values()) == 1
    assert first.dropped["same patch as an earlier commit (cherry-pick or backport)"] == 1
    state = json.loads((out / STATE).read_text())
    assert len(state["done"]) == 3
    again = mine(repo, out, MineOptions())
    assert again.kept == first.kept and again.dropped == first.dropped
    assert len(list(out.glob("[!.]*.json"))) == 1


def test_cli_mine_and_errors(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    assert main(["corpus", "mine", str(repo), "--out", str(out), "--paths", "tests/*"]) == 0
    printed = capsys.readouterr().out
    assert "2 commits with a failure log" in printed and "kept 1" in printed
    assert "dropped 1: no test code changed" in printed
    assert main(["corpus", "mine", str(tmp_path / "nope"), "--out", str(out)]) == 2
    not_git = tmp_path / "plain"
    not_git.mkdir()
    assert main(["corpus", "mine", str(not_git), "--out", str(out)]) == 2
    assert "not a git repository" in capsys.readouterr().err


GPL2_TITLE = "                    GNU GENERAL PUBLIC LICENSE\n                       Version 2, June 1991\n"


def test_licence_after_a_preamble_and_of_the_component_nearest_the_tests(tmp_path: Path) -> None:
    # storaged-project/udisks: the licence text follows the project's own preamble of 700 characters
    udisks = tmp_path / "udisks"
    udisks.mkdir()
    git(udisks, "init", "-q", "-b", "main")
    preamble = "The source code for the daemon is licensed to you under the GNU General Public License.\n" * 8
    copying = preamble + "-- BEGIN GPLv2+ License ---\n\n" + GPL2_TITLE
    commit(udisks, {"COPYING": copying, "src/tests/t.py": "x = 1\n"}, "initial")
    commit(udisks, {"src/tests/t.py": "x = 2\n"}, f"tests: fix\n\n{LOG}")
    out = tmp_path / "udisks-cases"
    mine(udisks, out, MineOptions())
    (case,) = [json.loads(p.read_text()) for p in out.glob("udisks-*.json")]
    assert case["licence"] == "GPL-2.0"
    # canonical/checkbox: no licence at the top, one per component
    checkbox = tmp_path / "checkbox"
    checkbox.mkdir()
    git(checkbox, "init", "-q", "-b", "main")
    files = {
        "providers/base/COPYING": GPL2_TITLE.replace("Version 2, June 1991", "Version 3, 29 June 2007"),
        "providers/other/LICENSE": "Apache License\nVersion 2.0\n",
        "providers/base/bin/pm_test": "#!/usr/bin/env python3\nprint('x')\n",
    }
    commit(checkbox, files, "initial")
    fixed = {"providers/base/bin/pm_test": "#!/usr/bin/env python3\nprint('y')\n"}
    commit(checkbox, fixed, f"pm_test: fix\n\n{LOG}")
    out = tmp_path / "checkbox-cases"
    mine(checkbox, out, MineOptions(paths=("providers/*",)))
    (case,) = [json.loads(p.read_text()) for p in out.glob("checkbox-*.json")]
    assert case["licence"] == "GPL-3.0"


def test_a_log_from_another_version_is_dropped_and_a_root_test_runner_is_no_product(tmp_path: Path) -> None:
    r = tmp_path / "scylla"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    runner = "def main():\n    run_suites()\n"
    mit = "Permission is hereby granted, free of charge"
    commit(r, {"test/pylib/cluster.py": TEST, "test.py": runner, "COPYING": mit}, "initial")
    # the log names line 6 of test_cart.py but prints code the file has never held
    stale = LOG.replace("tests/test_cart.py", "test/pylib/cluster.py").replace(
        "assert sum(cart) == expected_total()", "assert total(cart) == 4"
    )
    commit(r, {"test/pylib/cluster.py": TEST.replace("== expected", "!= expected")}, f"test: fix\n\n{stale}")
    good = LOG.replace("tests/test_cart.py", "test/pylib/cluster.py").replace("!= ", "== ")
    fixed = TEST.replace("== expected", "!= expected")
    commit(
        r,
        {"test/pylib/cluster.py": TEST, "test.py": runner.replace("run_suites", "run_all")},
        f"test: fix again\n\n{good.replace('== expected_total', '!= expected_total')}",
    )
    out = tmp_path / "cases"
    report = mine(r, out, MineOptions(paths=("test/*",)))
    assert report.dropped == {"the log comes from another version": 1}
    (case,) = [json.loads(p.read_text()) for p in out.glob("scylla-*.json")]
    assert not any("not test code" in reason for reason in case["confidence_reasons"])
    assert case["fix_subject"] == "test: fix again" and fixed in [f["content"] for f in case["test_files"]]


def test_licence_titles_win_over_prose_that_names_other_licences() -> None:
    udisks = (
        "The daemon is licensed to you under the GNU General Public License.\n"
        "The library is licensed to you under the GNU Library General Public License.\n\n" + GPL2_TITLE
    )
    assert licence_text(udisks) == "GPL-2.0"
    gpl3 = "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n... GNU Affero General Public License ..."
    assert licence_text(gpl3) == "GPL-3.0"
    assert licence_text("GNU LESSER GENERAL PUBLIC LICENSE\n Version 2.1, February 1999") == "LGPL-2.1"
    assert licence_text("                 GNU Lesser General Public License\n  Version 3, 29 June 2007") == (
        "LGPL-3.0"
    )
    assert licence_text("All rights reserved.") is None


def test_a_fix_of_a_product_schema_that_only_adds_tests_is_dropped(repo: Path, tmp_path: Path) -> None:
    # canonical/cloud-init 5aa9f5645d: the product's JSON schema is fixed, the tests only gain a case
    commit(repo, {"src/schema.json": '{"type": "object"}\n'}, "schema")
    added = TEST + "\n\ndef test_schema():\n    assert True\n"
    commit(
        repo, {"src/schema.json": '{"type": "array"}\n', "tests/test_cart.py": added}, f"schema: fix\n\n{LOG}"
    )
    out = tmp_path / "cases"
    report = mine(repo, out, MineOptions())
    assert report.dropped["the fix changes product code and only adds tests"] == 1
