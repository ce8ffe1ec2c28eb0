"""The whole CI report as JSON: summary, groups, and each failed test with its triage result."""

from __future__ import annotations

import json

from app.ci import CiReport


def render(report: CiReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
