"""The API's JSON of a triage, encoded without the response model, against what the model serves."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic_core import to_json

from app.service.pool_jobs import TriageJob
from app.service.pool_jobs import triage as triage_job
from app.service.schemas import StoredTriage
from app.service.views import served_triage, served_view, triage_view
from app.store.rows import SIGNATURE_KEY, EncodedResult
from app.store.rows import StoredTriage as StoredRecord
from tests.service.test_snapshots import EXAMPLE_LOG, OPTIONS, SCRIPTS


def _modelled(view: dict[str, Any]) -> Any:
    """``view`` as ``response_model=StoredTriage`` serves it, decoded."""
    return json.loads(StoredTriage.model_validate(view).model_dump_json())


def _record(result: dict[str, Any] | EncodedResult, test_id: str | None) -> StoredRecord:
    created = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    return StoredRecord(7, "done", test_id, created, {"k": 3}, None, result)


@pytest.mark.parametrize("test_id", ["t-1", None])
def test_a_worker_encoded_result_is_served_as_the_response_model_serves_its_view(test_id: str | None) -> None:
    done, _ = triage_job(TriageJob(SCRIPTS, EXAMPLE_LOG, OPTIONS))
    encoded, _ = triage_job(TriageJob(SCRIPTS, EXAMPLE_LOG, OPTIONS, encoded=True))
    assert isinstance(done, dict) and isinstance(encoded, EncodedResult)
    data = encoded.data()
    # the same result (each run took its own time), its failure's id beside
    assert {k: v for k, v in done.items() if k != SIGNATURE_KEY} == {**data, "timings": done["timings"]}
    assert encoded.signature == done[SIGNATURE_KEY]
    served = served_triage(_record(encoded, test_id))
    want = _modelled(triage_view(_record(data, test_id)))
    assert want["ranking"] and want["ranking"][0]["evidence"]
    assert json.loads(served) == want
    assert json.loads(served_triage(_record(data, test_id))) == want  # a dict result (model ranked)
    assert list(json.loads(served))[:4] == ["id", "status", "test_id", "created_at"]


@pytest.mark.parametrize(
    "view",
    [
        {"id": 1, "status": "done"},  # every declared field missing: defaults
        {
            "id": 1,
            "status": "done",
            "ranking": [{"rank": 1, "id": "B", "path": "p", "start_line": 1, "end_line": 2}],
        },
        {
            "id": 1,
            "status": "done",
            "ranking": [{"rank": 1, "id": "B", "path": "p", "start_line": 1, "end_line": 2, "score": 3}],
        },
        {"id": 1, "status": "done", "k": True, "extra": {"nested": [1, 2.5, "x"]}},
        {"id": 1, "status": "done", "timings": {"total_ms": math.inf}, "odd": math.nan, "ranking": []},
        {"id": 1, "status": "done", "ranking": [], "warnings": ("a", "b")},
    ],
    ids=["bare", "element-defaults", "int-score", "bool-k", "inf-nan", "tuple"],
)
def test_values_are_served_as_validation_leaves_them(view: dict[str, Any]) -> None:
    """Defaults filled in, and a value validation converts (an int score, a bool k, a tuple)
    converted as it would be; infinities and NaN as null."""
    record = _record({k: v for k, v in view.items() if k not in ("id", "status")}, None)
    assert json.loads(served_triage(record)) == _modelled(triage_view(record))
    assert json.loads(to_json(served_view(dict(view)), inf_nan_mode="null")) == _modelled(view)
