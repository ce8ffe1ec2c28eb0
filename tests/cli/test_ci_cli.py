"""`tcfl ci` end to end on real tools' output: `tcfl triage`'s answers per test, exit codes, bad files."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from app.cli import main
from app.ingest import read_results
from app.ingest.resolve import Checkout, find_scripts
from app.settings import get_settings
from tests.ci_tools import FAILED_TESTS, PytestRun
from tests.service.helpers import CI_MARKERS


@pytest.fixture(autouse=True)
def no_model_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "TCFL_MODEL_URL",
        "TCFL_MODEL",
        "TCFL_LOG_FUNCTIONS",
        "TCFL_DEFAULT_K",
        "TCFL_OUTPUT_FORMAT",
        *CI_MARKERS,  # a job of its own, never the CI's that runs these tests
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TCFL_DATABASE_URL", f"sqlite:///{tmp_path / 'tcfl.db'}")
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def ci_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["ci", *args, "--ranker", "heuristic", "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def tops(body: dict) -> dict[str, tuple[str, int]]:
    """Method name -> (path, start line) of the top-ranked element."""
    found = {}
    for test in body["tests"]:
        first = test["result"]["ranking"][0]
        found[test["test_id"].rsplit(".", 1)[-1].rsplit("::", 1)[-1]] = (first["path"], first["start_line"])
    return found


def triage_tops(results: Path, root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    """`tcfl triage` on each failed test's own log, with the scripts the test names."""
    found = {}
    checkout = Checkout.scan(root)
    for run in read_results(results).failed:
        log = tmp_path / f"{abs(hash(run.test_id))}.log"
        log.write_text(run.log)
        scripts, _ = find_scripts(run, checkout)
        paths = [s.path for s in scripts]
        code = main(["triage", *paths, "--log", str(log), "--ranker", "heuristic", "--json", "--no-store"])
        assert code == 0
        first = json.loads(capsys.readouterr().out)["ranking"][0]
        found[run.test_id.rsplit(".", 1)[-1].rsplit("::", 1)[-1]] = (first["path"], first["start_line"])
    return found


def test_junit_gives_the_same_tops_as_triage_on_each_log(
    py_results: PytestRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, body = ci_json(capsys, str(py_results.junit), "--root", str(py_results.root))
    assert code == 0
    assert body["summary"]["failed"] == body["summary"]["triaged"] == 2
    monkeypatch.chdir(py_results.root)  # triage takes script paths relative to the checkout
    assert tops(body) == triage_tops(py_results.junit, py_results.root, tmp_path, capsys)
    assert set(tops(body)) == set(FAILED_TESTS)


@pytest.mark.slow
def test_avocado_results_and_its_junit_agree_with_triage(
    avocado_job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = avocado_job.parents[1] / "avocado"  # the suite copy avocado ran in
    _, job = ci_json(capsys, str(avocado_job), "--root", str(root))
    _, xunit = ci_json(capsys, str(avocado_job / "results.xml"), "--root", str(root))
    assert tops(job) == tops(xunit)
    assert set(tops(job)) == set(FAILED_TESTS)
    monkeypatch.chdir(root)
    assert tops(job) == triage_tops(avocado_job, root, tmp_path, capsys)
    # the failure inside the helper module is placed there: the helper was found through the import
    assert tops(job)["test_jumbo_mtu"][0] == "helpers/inventory.py"


def test_subunit_and_the_stestr_console_agree(
    stestr_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    stream, console = stestr_run
    root = stream.parent / "stestr"
    code, from_stream = ci_json(capsys, str(stream), "--root", str(root))
    assert code == 0
    _, from_console = ci_json(capsys, str(console), "--root", str(root))
    assert tops(from_stream) == tops(from_console)
    assert set(tops(from_stream)) == set(FAILED_TESTS)


def test_tests_whose_scripts_are_missing_exit_1_and_are_named(
    py_results: PytestRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code = main(["ci", str(py_results.junit), "--root", str(empty), "--ranker", "heuristic"])
    captured = capsys.readouterr()
    assert code == 1
    for name in FAILED_TESTS:
        assert f"not triaged: tests.data.ci.suite.test_links.TestLinks.{name}" not in captured.err
        assert any(name in line and "not triaged" in line for line in captured.err.splitlines())


def test_out_file_and_an_archive_of_results(
    py_results: PytestRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "artifacts.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(py_results.junit, arcname="reports/junit.xml")
    out = tmp_path / "report.sarif"
    code = main(
        [
            "ci",
            str(archive),
            "--root",
            str(py_results.root),
            "--ranker",
            "heuristic",
            "--format",
            "sarif",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert capsys.readouterr().out == ""
    assert len(json.loads(out.read_text())["runs"][0]["results"]) == 2


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info, None


def test_bad_results_files_are_usage_errors_that_write_nothing_outside(
    py_results: PytestRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit = py_results.junit.read_bytes()
    cases = {
        "truncated.xml": (junit[: len(junit) // 2], "not well-formed XML"),
        "bomb.xml": (
            b'<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            b'<testsuite name="s"><testcase name="t"><failure message="&b;"/></testcase></testsuite>',
            "unsafe XML",
        ),
        "climb.tar.gz": (_tar([_file("../../escaped.xml", junit)]), "climbs out"),
        "abs.tar.gz": (_tar([_file("/tmp/escaped-abs.xml", junit)]), "absolute path"),
        "etc.tar.gz": (_tar([_link("reports/junit.xml", "/etc/passwd")]), "points outside"),
        "updir-link.tar.gz": (_tar([_link("x.xml", "../../../etc/passwd")]), "points outside"),
        "link.zip": (_zip_with_symlink(), "symbolic link"),
    }
    work = tmp_path / "work"
    work.mkdir()
    before = set(tmp_path.parent.iterdir())
    for name, (data, message) in cases.items():
        path = work / name
        path.write_bytes(data)
        code = main(["ci", str(path), "--root", str(py_results.root), "--ranker", "heuristic"])
        err = capsys.readouterr().err
        assert code == 2, name
        assert message in err and err.startswith("tcfl: error: "), (name, err)
        assert "Traceback" not in err
    assert set(tmp_path.parent.iterdir()) == before
    assert not (tmp_path / "escaped.xml").exists() and not Path("/tmp/escaped-abs.xml").exists()
    assert sorted(p.name for p in work.iterdir()) == sorted(cases)


def _zip_with_symlink() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("reports/junit.xml")
        info.external_attr = 0o120777 << 16
        archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["ci", str(tmp_path / "missing.xml")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["ci", "x.xml", "--format", "html"])
    assert info.value.code == 2
    assert main(["ci", str(tmp_path), "--root", str(tmp_path / "nope")]) == 2
    assert "--root" in capsys.readouterr().err


@pytest.mark.slow
def test_every_format_of_the_same_failures_gives_the_same_tops(
    py_results: PytestRun,
    avocado_job: Path,
    stestr_run: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """pytest's JUnit, report log and console, avocado's job folder, stestr's subunit: one answer."""
    stream, _ = stestr_run
    inputs = [
        (py_results.junit, py_results.root),
        (py_results.reportlog, py_results.root),
        (py_results.console, py_results.root),
        (avocado_job, avocado_job.parents[1] / "avocado"),
        (stream, stream.parent / "stestr"),
    ]
    answers = [tops(ci_json(capsys, str(results), "--root", str(root))[1]) for results, root in inputs]
    assert all(answer == answers[0] for answer in answers), answers
    source = (py_results.root / "test_links.py").read_text().splitlines()
    assertion = next(n for n, line in enumerate(source, 1) if "self.assertEqual(speed" in line)
    assert answers[0]["test_link_speed"] == ("test_links.py", assertion)  # the failing assertion itself
    assert answers[0]["test_jumbo_mtu"][0] == "helpers/inventory.py"  # the KeyError is in the helper


def test_triage_of_a_log_with_several_failures_says_so(
    py_results: PytestRun, capsys: pytest.CaptureFixture[str]
) -> None:
    script = str(py_results.root / "test_links.py")
    main(["triage", script, "--log", str(py_results.console), "--no-store"])
    err = capsys.readouterr().err
    assert f"the log holds {len(FAILED_TESTS)} failed tests" in err
    assert all(name in err for name in FAILED_TESTS)
    assert "tcfl ci" in err
