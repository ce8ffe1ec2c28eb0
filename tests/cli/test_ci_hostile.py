"""`tcfl ci` on hostile input: a checkout that reaches outside itself, a FIFO, malformed results files.

The secret behind a link must appear in no output and no database; a FIFO must not hang the
run; a malformed record must cost only itself (a warning), never the report of the other tests
(exit 1 with "tcfl: failed" was the old answer to at least 25 such files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli import main
from app.settings import get_settings
from tests.ingest import hostile
from tests.ingest.hostile import Good
from tests.service.helpers import CI_MARKERS

SECRET = "TOKEN=never-shown-4f1c2"
TRACE = (
    'Traceback (most recent call last):\n  File "/ci/tests/{module}.py", line 2, in {name}\nValueError: boom'
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "TCFL_MODEL_URL",
        "TCFL_MODEL",
        "TCFL_LOG_FUNCTIONS",
        "TCFL_DEFAULT_K",
        "TCFL_OUTPUT_FORMAT",
        *CI_MARKERS,
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TCFL_DATABASE_URL", f"sqlite:///{tmp_path / 'tcfl.db'}")
    get_settings.cache_clear()


def _case(module: str, name: str, *, failed: bool = True) -> str:
    inner = f'<failure message="ValueError: boom">{TRACE.format(module=module, name=name)}</failure>'
    return f'<testcase classname="tests.{module}" name="{name}">{inner if failed else ""}</testcase>'


def _checkout(tmp_path: Path) -> Path:
    """A checkout whose test_leak.py links to a secret outside it; test_good.py is ordinary."""
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_good.py").write_text("def test_good():\n    raise ValueError('boom')\n")
    (root / "tests" / "test_leak.py").symlink_to(secret)
    (root / "tests" / "test_env.py").symlink_to("/proc/self/environ")
    return root


def _junit(tmp_path: Path, *cases: str) -> Path:
    path = tmp_path / "junit.xml"
    path.write_text(f'<testsuites><testsuite name="pytest">{"".join(cases)}</testsuite></testsuites>')
    return path


def test_a_link_out_of_the_checkout_leaks_nothing_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _checkout(tmp_path)
    results = _junit(
        tmp_path,
        _case("test_leak", "test_x"),
        _case("test_env", "test_e"),
        _case("test_good", "test_good"),
        _case("test_leak", "test_passes", failed=False),
    )
    db = tmp_path / "history.db"
    outputs = {}
    for fmt in ("json", "markdown", "text", "junit", "sarif"):
        store = ["--db", f"sqlite:///{db}"] if fmt == "json" else ["--no-store"]
        code = main(
            ["ci", str(results), "--root", str(root), "--format", fmt, "--ranker", "heuristic", *store]
        )
        captured = capsys.readouterr()
        assert code == 1, captured.err  # two tests not triaged: their scripts were refused
        assert "tcfl: failed" not in captured.err
        assert "never-shown" not in captured.out + captured.err, fmt
        outputs[fmt] = captured.out
    assert "never-shown" not in db.read_bytes().decode("latin-1")
    body = json.loads(outputs["json"])
    by_id = {t["test_id"]: t for t in body["tests"]}
    assert by_id["tests.test_good.test_good"]["triaged"]
    assert by_id["tests.test_leak.test_x"]["warnings"] == [
        "tests/test_leak.py: a link to a file outside the checkout; refused"
    ]
    assert by_id["tests.test_env.test_e"]["warnings"] == [
        "tests/test_env.py: a link to a file outside the checkout; refused"
    ]
    assert "tests/test_leak.py: a link to a file outside the checkout; refused" in outputs["markdown"]


def test_a_fifo_in_the_checkout_does_not_hang(tmp_path: Path) -> None:
    import os

    root = tmp_path / "root"
    (root / "tests").mkdir(parents=True)
    os.mkfifo(root / "tests" / "test_fifo.py")
    (root / "tests" / "test_good.py").write_text("def test_good():\n    raise ValueError('boom')\n")
    results = _junit(tmp_path, _case("test_fifo", "test_y"), _case("test_good", "test_good"))
    command = [sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main())"]
    args = [
        "ci",
        str(results),
        "--root",
        str(root),
        "--format",
        "json",
        "--ranker",
        "heuristic",
        "--no-store",
    ]
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    body = json.loads(done.stdout)
    by_id = {t["test_id"]: t for t in body["tests"]}
    assert by_id["tests.test_good.test_good"]["triaged"]
    assert by_id["tests.test_fifo.test_y"]["warnings"] == [
        "tests/test_fifo.py: not a regular file (a device, FIFO or socket); refused"
    ]


MALFORMED_JUNIT = [
    '<testcase classname="tests.test_good" name="test_t" time="NaN"><failure/></testcase>',
    '<testcase classname="tests.test_good" name="test_u" time="1,5"><failure/></testcase>',
    '<testcase classname="tests.test_good" name="test_v" time="-1"/>',
    '<testcase classname="" name=""><failure/></testcase>',
    f'<testcase classname="tests.test_good" name="{"x" * 1500}"><failure/></testcase>',
    '<testcase classname="tests.test_good" name="test_&#0;nul"><failure/></testcase>',
    '<testsuite name="inner"><testcase classname="tests.test_good" name="test_nested"/></testsuite>',
]


@pytest.mark.parametrize("record", MALFORMED_JUNIT)
def test_a_malformed_record_keeps_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record: str
) -> None:
    root = _checkout(tmp_path)
    results = _junit(
        tmp_path, _case("test_good", "test_good"), record, _case("test_good", "test_ok", failed=False)
    )
    code = main(
        ["ci", str(results), "--root", str(root), "--format", "json", "--ranker", "heuristic", "--no-store"]
    )
    captured = capsys.readouterr()
    assert "tcfl: failed" not in captured.err, captured.err
    assert code in (0, 1)
    body = json.loads(captured.out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    assert "tests.test_good.test_good" in {t["test_id"] for t in body["tests"]}
    assert body["summary"]["passed"] >= 1


def test_malformed_records_all_reach_the_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _checkout(tmp_path)
    results = _junit(tmp_path, _case("test_good", "test_good"), *MALFORMED_JUNIT)
    code = main(["ci", str(results), "--root", str(root), "--format", "json", "--ranker", "heuristic"])
    captured = capsys.readouterr()
    assert code == 1 and "tcfl: failed" not in captured.err, captured.err
    assert "not recorded" not in captured.err and "recorded 7 new run(s) of 7" in captured.err, captured.err


def _write_checkout(root: Path, good: list[Good]) -> None:
    folder = root / "pkg"
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["import unittest", "", "", "class TestCase(unittest.TestCase):"]
    for test in good:
        name = test.test_id.rsplit(".", 1)[-1]
        lines += [
            f"    def {name}(self):",
            "        raise ValueError('boom')" if test.failed else "        pass",
            "",
        ]
    (folder / "test_mod.py").write_text("\n".join(lines) + "\n")


FUZZ_CI = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow
@FUZZ_CI
@given(
    hostile.GOOD_TESTS,
    st.sampled_from(["junit", "reportlog", "subunit", "joblog"]),
    st.lists(st.integers(0, 10**6), max_size=3),
    st.data(),
)
def test_fuzz_through_tcfl_ci(
    tmp_path_factory: pytest.TempPathFactory,
    good: list[Good],
    fmt: str,
    seeds: list[int],
    data: st.DataObject,
) -> None:
    tmp = tmp_path_factory.mktemp("fuzz")
    dotted = [hostile.dotted(t) for t in good]
    mangle = {
        "junit": hostile.junit_mangled(),
        "reportlog": hostile.reportlog_mangled(),
        "subunit": hostile.subunit_mangled(),
        "joblog": hostile.joblog_mangled(),
    }[fmt]
    mangled = [data.draw(mangle) for _ in seeds]
    order = data.draw(st.permutations(list(range(len(good) + len(mangled)))))
    if fmt == "reportlog":
        ids = [Good(f"pkg/test_mod.py::TestCase::{t.test_id.rsplit('.', 1)[-1]}", t.failed) for t in dotted]
        blob = hostile.reportlog_file(ids, mangled, order)
    else:
        ids = dotted
        blob = {"junit": hostile.junit_file, "subunit": hostile.subunit_file, "joblog": hostile.joblog_file}[
            fmt
        ](dotted, mangled, order)
    _write_checkout(tmp / "root", dotted)
    path = tmp / f"results.{fmt}"
    path.write_bytes(blob)
    out = tmp / "out.json"
    code = main(
        [
            "ci",
            str(path),
            "--root",
            str(tmp / "root"),
            "--results-format",
            fmt,
            "--format",
            "json",
            "--ranker",
            "heuristic",
            "--no-store",
            "--out",
            str(out),
        ]
    )
    assert code in (0, 1)
    body = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))
    failed = {t["test_id"] for t in body["tests"]}
    for test in ids:
        if test.failed:
            assert test.test_id in failed
    assert body["summary"]["passed"] >= sum(1 for t in ids if not t.failed)
