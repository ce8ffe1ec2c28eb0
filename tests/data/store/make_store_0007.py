"""Build ``store-0007.db``: a database written by tcfl at schema 0007_run_values (before 0008).

It is what a deployment holds when it upgrades: its rows were written by that version's code,
through its own API, from real tool output. Run it inside a checkout of that version (commit
62b22016), so that the service and its analysis workers all load that code:

    mkdir /tmp/tcfl-0007 && git archive 62b22016 | tar -x -C /tmp/tcfl-0007
    mkdir -p /tmp/tcfl-0007/tests/data/store && cp tests/data/store/make_store_0007.py "$_"
    cd /tmp/tcfl-0007 && PYTHONPATH=$PWD "$OLDPWD/.venv/bin/python" \
        tests/data/store/make_store_0007.py "$OLDPWD/tests/data/store/store-0007.db"

It runs real pytest on a copy of tests/data/ci/suite (JUnit XML with the captured logs) and then,
in process, that version's service on a new SQLite file:

- ``POST /v1/ingest`` of the JUnit XML with the suite's scripts: a CI run (``ci_runs``,
  ``ci_run_tests`` with that version's 12-digit signatures), a stored triage per failed test and
  every test's run in the history (the keys in node-id form: pytest's JUnit suite is "pytest");
- ``POST /v1/triage`` of the running example: a stored triage with its analysis snapshot;
- ``POST /v1/runs`` of runs of the same tests under other tools' ids: pytest's JUnit ids under
  another suite name (dotted keys then), stestr/subunit ids (dotted), avocado's results.json and
  xUnit ids (``path::Class.test`` and the xUnit's class-prefixed path), each failure with its
  log and scripts, so it has its err_sig.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE.parent / "ci" / "suite"
EXAMPLE = HERE.parent / "running-example"


def _junit(work: Path) -> str:
    root = work / "suite"
    shutil.copytree(SUITE, root, ignore=shutil.ignore_patterns("__pycache__", ".stestr"))
    junit = work / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", "test_links.py"],
        cwd=root,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return junit.read_text()


def _scripts() -> list[dict[str, str]]:
    return [{"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))]


LOG = """INFO checking jumbo frames on eth1
Traceback (most recent call last):
  File "/ci/work/test_links.py", line 24, in test_jumbo_mtu
    mtu = port_mtu("eth1")
  File "/ci/work/helpers/inventory.py", line 22, in port_mtu
    return port["mtu"]
KeyError: 'mtu'
"""


def _runs(scripts: list[dict[str, str]]) -> list[dict]:
    """The same two tests under the ids other tools give them; failures carry log and scripts."""
    ids = [
        ("test_links.TestLinks.test_jumbo_mtu", "unit"),  # pytest JUnit, junit_suite_name=unit
        ("test_links.TestLinks.test_jumbo_mtu", "subunit"),  # stestr
        ("1-test_links.py:TestLinks.test_jumbo_mtu;run-1", "avocado"),  # avocado results.json
        ("TestLinks.test_links.py:TestLinks.test_jumbo_mtu", "job-1"),  # avocado xUnit via junit.py
    ]
    out = []
    for n, (test_id, suite) in enumerate(ids):
        for verdict in ("pass", "fail"):
            out.append(
                {
                    "test_id": test_id,
                    "suite": suite,
                    "verdict": verdict,
                    "started_at": f"2026-11-2{n}T10:0{int(verdict == 'fail')}:00Z",
                    "ci": {"pipeline": suite, "job_url": f"https://ci.example/{suite}/{n}/{verdict}"},
                    "scripts": scripts,
                    "log": LOG if verdict == "fail" else None,
                }
            )
    return out


def main(out: Path) -> None:
    import app
    from fastapi.testclient import TestClient

    from app.service.api import create_app
    from app.settings import Settings

    print(f"tcfl code from {Path(app.__file__).parent}", file=sys.stderr)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as work:
        junit = _junit(Path(work))
    scripts = _scripts()
    settings = Settings(database_url=f"sqlite:///{out}", analysis_workers=1)
    with TestClient(create_app(settings)) as api:
        ingest = api.post(
            "/v1/ingest",
            json={"results": {"name": "junit.xml", "content": junit}, "scripts": scripts, "ranker": "heuristic"},
        )
        assert ingest.status_code == 200, ingest.text
        body = {
            "scripts": [{"path": "test_example.py", "content": (EXAMPLE / "test_example.py").read_text()}],
            "log": (EXAMPLE / "failure.log").read_text(),
            "log_functions": ["Log.log"],
            "ranker": "heuristic",
            "test_id": "test_example.py::test_example",
        }
        triage = api.post("/v1/triage", json=body)
        assert triage.status_code == 200, triage.text
        runs = api.post("/v1/runs", json={"runs": _runs(scripts)})
        assert runs.status_code == 201, runs.text
        summary = {
            "ingest": {t["test_id"]: t["signature"] for t in ingest.json()["tests"]},
            "tests": [t["key"] for t in api.get("/v1/tests").json()["items"]],
            "signatures": [s["err_sig"] for s in api.get("/v1/signatures").json()["items"]],
        }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
