"""POST /v1/ingest and GET /v1/ingests/{id} on a real server (SQLite and PostgreSQL), real pytest output."""

from __future__ import annotations

import base64
import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.ci_tools import FAILED_TESTS, SUITE, PytestRun, py_results

__all__ = ["py_results"]  # the session fixture, used by name


def _scripts() -> list[dict[str, str]]:
    return [
        {"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))
    ]


def _suite_tar() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(SUITE.rglob("*.py")):
            tar.add(path, arcname=f"repo/{path.relative_to(SUITE)}")
    return buffer.getvalue()


def _tar(name: str, data: bytes | None = None, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        if link is not None:
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
        else:
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data or b""))
    return buffer.getvalue()


def test_json_ingest_stores_one_triage_per_failed_test(api: httpx.Client, py_results: PytestRun) -> None:
    body = {
        "results": {"name": "junit.xml", "content": py_results.junit.read_text()},
        "scripts": _scripts(),
        "ranker": "heuristic",
        "k": 3,
    }
    response = api.post("/v1/ingest", json=body)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["summary"]["failed"] == report["summary"]["triaged"] == len(FAILED_TESTS)
    assert report["summary"]["passed"] == 1
    assert response.headers["location"] == f"/v1/ingests/{report['id']}"
    stored = api.get(f"/v1/ingests/{report['id']}").json()
    assert [t["test_id"] for t in stored["tests"]] == [t["test_id"] for t in report["tests"]]
    for test in stored["tests"]:
        assert test["result"]["ranking"] and len(test["result"]["ranking"]) == 3
        triage = api.get(f"/v1/triage/{test['triage_id']}").json()
        assert triage["test_id"] == test["test_id"][:200]
        assert triage["ranking"] == test["result"]["ranking"]
    assert stored["groups"] == report["groups"]


def test_multipart_with_a_checkout_archive_and_answer_formats(
    api: httpx.Client, py_results: PytestRun
) -> None:
    files = {
        "results": ("report.jsonl", py_results.reportlog.read_bytes(), "application/octet-stream"),
        "archive": ("repo.tar.gz", _suite_tar(), "application/gzip"),
    }
    data = {"root": "repo", "ranker": "heuristic"}
    sarif = api.post("/v1/ingest", files=files, data=data, params={"format": "sarif"})
    assert sarif.status_code == 200, sarif.text
    assert sarif.headers["content-type"].startswith("application/sarif+json")
    results = sarif.json()["runs"][0]["results"]
    assert len(results) == len(FAILED_TESTS)
    markdown = api.post("/v1/ingest", files=files, data=data, headers={"Accept": "text/markdown"})
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text.startswith("## tcfl: 2 failed test(s)")


def test_base64_results_and_missing_scripts_are_named(api: httpx.Client, py_results: PytestRun) -> None:
    body = {
        "results": {
            "content": base64.b64encode(py_results.junit.read_bytes()).decode(),
            "encoding": "base64",
        },
        "ranker": "heuristic",
    }
    report = api.post("/v1/ingest", json=body).json()
    assert report["summary"]["triaged"] == 0
    assert len(report["summary"]["not_triaged"]) == len(FAILED_TESTS)
    assert all("no script" in t["problem"] for t in report["tests"])


@pytest.mark.parametrize(
    ("name", "payload", "status", "needle"),
    [
        ("truncated", {"results": {"content": "<testsuite><testcase name='a'>"}}, 422, "not well-formed XML"),
        (
            "bomb",
            {"results": {"content": '<!DOCTYPE t [<!ENTITY a "aaaa">]><testsuite name="&a;"/>'}},
            422,
            "unsafe XML",
        ),
        ("unknown field", {"results": {"content": "x"}, "extra": 1}, 422, "unknown field"),
        ("no results", {"scripts": []}, 422, "results"),
        (
            "traversal script",
            {"results": {"content": "x"}, "scripts": [{"path": "../x.py", "content": ""}]},
            422,
            "climbs out",
        ),
        (
            "big script",
            {"results": {"content": "x"}, "scripts": [{"path": "a.py", "content": "x" * 70_000}]},
            413,
            "max_script_bytes",
        ),
        ("bad format", {"results": {"content": "x"}, "format": "yaml"}, 422, "format must be one of"),
    ],
)
def test_bad_json_bodies(api: httpx.Client, name: str, payload: dict, status: int, needle: str) -> None:
    response = api.post("/v1/ingest", json=payload)
    assert response.status_code == status, (name, response.text)
    assert needle in response.json()["detail"]


@pytest.mark.parametrize(
    ("archive", "needle"),
    [
        (_tar("../../escape.py", b"x"), "climbs out"),
        (_tar("etc", link="/etc"), "points outside"),
        (_tar("/abs.py", b"x"), "absolute path"),
    ],
    ids=["climbs-out", "link-out", "absolute"],  # the archives' bytes hold a timestamp: never an id
)
def test_hostile_archives_are_422(
    api: httpx.Client, py_results: PytestRun, archive: bytes, needle: str
) -> None:
    files = {"results": ("junit.xml", py_results.junit.read_bytes()), "archive": ("repo.tar.gz", archive)}
    response = api.post("/v1/ingest", files=files)
    assert response.status_code == 422 and needle in response.json()["detail"]
    results_archive = api.post("/v1/ingest", files={"results": ("results.tar.gz", archive)})
    assert results_archive.status_code == 422 and needle in results_archive.json()["detail"]


def test_other_errors(api: httpx.Client) -> None:
    assert api.post("/v1/ingest", content=b"x", headers={"content-type": "text/csv"}).status_code == 415
    missing = api.get("/v1/ingests/999999")
    assert missing.status_code == 404 and "no CI ingest" in missing.json()["detail"]
    bad = api.post("/v1/ingest", json={"results": {"content": "x"}}, params={"format": "html"})
    assert bad.status_code == 422


def test_nothing_is_written_outside_the_work_folder(api: httpx.Client, tmp_path: Path) -> None:
    before = {p.name for p in Path("/tmp").iterdir() if p.name in ("escape.py", "abs.py")}
    api.post("/v1/ingest", files={"results": ("r.tar.gz", _tar("../../../../tmp/escape.py", b"x"))})
    after = {p.name for p in Path("/tmp").iterdir() if p.name in ("escape.py", "abs.py")}
    assert after == before
    assert json.dumps(api.get("/healthz").json())


def test_a_test_log_over_the_limit_is_named_not_triaged(api: httpx.Client, py_results: PytestRun) -> None:
    from xml.etree.ElementTree import fromstring, tostring

    root = fromstring(py_results.junit.read_bytes())
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    failed[0].find("system-out").text = "INFO chatter\n" * 20_000  # 260 kB > max_log_bytes=120000
    body = {
        "results": {"content": tostring(root, encoding="unicode")},
        "scripts": _scripts(),
        "ranker": "heuristic",
    }
    report = api.post("/v1/ingest", json=body).json()
    problems = {t["test_id"]: t["problem"] for t in report["tests"]}
    big = failed[0].get("classname") + "." + failed[0].get("name")
    assert "max_log_bytes=120000" in problems[big]
    assert sum(1 for p in problems.values() if p is None) == 1


def test_the_dashboard_lists_the_run_with_links_to_each_triage(
    api: httpx.Client, py_results: PytestRun
) -> None:
    body = {
        "results": {"content": py_results.junit.read_text()},
        "scripts": _scripts(),
        "ranker": "heuristic",
    }
    report = api.post("/v1/ingest", json=body).json()
    page = api.get(report["dashboard"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for test in report["tests"]:
        assert test["test_id"] in page.text
        assert f'href="/triage/{test["triage_id"]}"' in page.text
    assert page.text.count("<h2>Group ") == len(report["groups"])
    assert api.get("/ingests/999999").status_code == 404
    moved = api.get(f"/runs/{report['id']}", follow_redirects=False)  # the page's old address
    assert moved.status_code == 308 and moved.headers["location"] == report["dashboard"]


def _junit_passing(junit: bytes, test: str) -> str:
    """The job's JUnit XML with ``test`` passing: its failure element dropped, the rest as pytest wrote it."""
    from xml.etree.ElementTree import fromstring, tostring

    root = fromstring(junit)
    for case in root.iter("testcase"):
        failure = case.find("failure")
        if case.get("name") == test and failure is not None:
            case.remove(failure)
    return tostring(root, encoding="unicode")


def _spectrum(api: httpx.Client, test: str) -> dict:
    from app.history.records import parse_test_id

    key = parse_test_id(f"test_links.TestLinks.{test}", "pytest")[0].key
    page = api.get(f"/v1/tests/{key}/spectrum")
    assert page.status_code == 200, page.text
    return page.json()


def test_passes_are_stored_with_their_scripts_and_count_in_the_spectrum(
    api: httpx.Client, py_results: PytestRun
) -> None:
    junit = py_results.junit.read_bytes()
    for name, content in (
        ("spectrum-fail.xml", junit.decode()),
        ("spectrum-pass.xml", _junit_passing(junit, "test_link_speed")),
    ):
        body = {"results": {"name": name, "content": content}, "scripts": _scripts(), "ranker": "heuristic"}
        report = api.post("/v1/ingest", json=body).json()
        assert not any("passing test" in w for w in report["warnings"]), report["warnings"]
    # the pass in the job beside the failures, by its must-run lines
    known = _spectrum(api, "test_ports_known")
    assert known["passing_runs"] >= 1 and known["failing_runs"] == 0
    assert any(e["ep"] > 0 for e in known["elements"])
    # one test passing in one job and failing in another: both runs on the same script version
    speed = _spectrum(api, "test_link_speed")
    assert speed["passing_runs"] >= 1 and speed["failing_runs"] >= 1
    assert any(e["ep"] > 0 and e["ef"] > 0 for e in speed["elements"])


def test_a_pass_without_its_script_is_counted_in_the_warnings(
    api: httpx.Client, py_results: PytestRun
) -> None:
    body = {
        "results": {"name": "noscripts.xml", "content": py_results.junit.read_text()},
        "ranker": "heuristic",
    }
    report = api.post("/v1/ingest", json=body).json()
    assert "1 passing test(s) had no script found in the checkout" in " ".join(report["warnings"])
    stored = api.get(f"/v1/ingests/{report['id']}").json()
    assert stored["warnings"] == report["warnings"]
