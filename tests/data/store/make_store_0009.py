"""Build ``store-0009.db``: a database written by tcfl at schema 0009_launches_labels (before 0010).

What a deployment holds when it upgrades to ``0010_ingest_key``: rows written by that version's
code, through its own API. Run it inside a checkout of that version (commit e57debd), so that
the service and its analysis workers all load that code:

    mkdir /tmp/tcfl-0009 && git archive e57debd | tar -x -C /tmp/tcfl-0009
    mkdir -p /tmp/tcfl-0009/tests/data/store && cp tests/data/store/make_store_0009.py "$_"
    cd /tmp/tcfl-0009 && PYTHONPATH=$PWD "$OLDPWD/.venv/bin/python" \
        tests/data/store/make_store_0009.py "$OLDPWD/tests/data/store/store-0009.db"

It sends, in process, that version's service on a new SQLite file one ``POST /v1/ingest`` of
``tests/data/ci/suite``'s JUnit XML (``junit.xml`` beside this script, written by pytest on that
suite) with the suite's scripts, naming its CI job by URL (``JOB_URL``): an ingest, a stored
triage per failed test, every test's run in the history and the job's launch.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE.parent / "ci" / "suite"
JOB_URL = "https://ci.example.test/jobs/store-0009"


def main(out: Path) -> None:
    import app
    from fastapi.testclient import TestClient

    from app.service.api import create_app
    from app.settings import Settings

    print(f"tcfl code from {Path(app.__file__).parent}", file=sys.stderr)
    out.unlink(missing_ok=True)
    scripts = [
        {"path": str(p.relative_to(SUITE)), "content": p.read_text()} for p in sorted(SUITE.rglob("*.py"))
    ]
    junit = (HERE / "store-0009-junit.xml").read_text()
    settings = Settings(database_url=f"sqlite:///{out}", analysis_workers=1)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as api:
        body = {
            "results": {"name": "junit.xml", "content": junit},
            "scripts": scripts,
            "ranker": "heuristic",
            "job_url": JOB_URL,
        }
        ingest = api.post("/v1/ingest", json=body)
        assert ingest.status_code == 200, ingest.text
        answer = ingest.json()
    print(json.dumps({"id": answer["id"], "triage_ids": [t["triage_id"] for t in answer["tests"]]}))


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
