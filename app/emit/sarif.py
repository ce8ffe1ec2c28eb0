"""SARIF 2.1.0 (plain dicts): one result per failed test, its top-ranked element as the location.

The other ranked elements are related locations; tests that could not be triaged are tool
notifications, so code-scanning views never show a location we do not have.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from app.ci import CiReport
from app.emit import status

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
RULE_ID = "tcfl/suspicious-test-code"
FULL_DESCRIPTION = "Ranked from the failed test's script and log, without re-running it."


def _version() -> str:
    try:
        return metadata.version("tcfl")
    except metadata.PackageNotFoundError:
        return "0"


def _location(path: str, start: int, end: int) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path, "uriBaseId": "SRCROOT"},
            "region": {"startLine": start, "endLine": end},
        }
    }


def document(report: CiReport) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    for item in report.triaged:
        if item.result is None or not item.result.ranking:
            notifications.append(
                {
                    "level": "warning",
                    "message": {
                        "text": f"{item.run.test_id}: not triaged ({item.problem or 'nothing to rank'})"
                    },
                }
            )
            continue
        ranking = item.result.ranking
        top = ranking[0]
        said = status(report, item)
        related = []
        for n, ranked in enumerate(ranking[1:], 1):
            loc = _location(ranked.path, ranked.start_line, ranked.end_line)
            loc["id"] = n
            loc["message"] = {"text": f"rank {ranked.rank}: {ranked.id} ({ranked.reason})"}
            related.append(loc)
        results.append(
            {
                "ruleId": RULE_ID,
                "ruleIndex": 0,
                "level": "error",
                "message": {
                    "text": f"{item.run.test_id} failed: {item.error or '(no error message)'}. "
                    + (f"{said[0].upper()}{said[1:]}. " if said else "")
                    + f"Most suspicious {item.result.level}: {top.id} ({item.result.ranker}: {top.reason})."
                },
                "locations": [_location(top.path, top.start_line, top.end_line)],
                "relatedLocations": related,
                "partialFingerprints": {"tcflSignature/v2": item.signature},  # v2: the 40-digit err_sig
                "properties": {
                    "testId": item.run.test_id,
                    "verdict": item.run.verdict,
                    "ranker": item.result.ranker,
                    "level": item.result.level,
                    "status": said,
                },
            }
        )
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tcfl",
                        "version": _version(),
                        "rules": [
                            {
                                "id": RULE_ID,
                                "name": "SuspiciousTestCode",
                                "shortDescription": {
                                    "text": "Test code most likely to hold the fault of a failed test"
                                },
                                "fullDescription": {"text": FULL_DESCRIPTION},
                                "defaultConfiguration": {"level": "error"},
                            }
                        ],
                    }
                },
                "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
                "results": results,
            }
        ],
    }


def render(report: CiReport) -> str:
    return json.dumps(document(report), indent=2, ensure_ascii=False) + "\n"
