"""Launches and labels over HTTP: ``/v1/launches``, ``/v1/launches/{id}``, ``/v1/launches/trend``,
``/v1/labels``.

A launch is one CI job as ``tcfl ci`` or ``POST /v1/ingest`` recorded it: every test with its
verdict and duration, its failures grouped by signature with each one's triage, history verdict
and label. A label (a defect type from ``TCFL_DEFECT_TYPES``, a bug link, a comment) goes on one
failure or on a signature group; the next failure of a labelled group carries it automatically
(``auto``), and ``DELETE /v1/labels/{id}`` takes a label off.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.history.signatures import normalise_error
from app.service.deps import Runtime, RuntimeDep
from app.service.routes.triage import ERRORS, MAX_ID
from app.store.labels import LabelStore
from app.store.launches import PAGE, LaunchStore

router = APIRouter(tags=["launches"])
TREND_LAUNCHES = 30
SIG = "^[0-9a-f]{40}$"


def failure_groups(tests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A launch's failures grouped by signature, in order of first appearance."""
    groups: dict[str, dict[str, Any]] = {}
    for test in tests:
        if test["verdict"] not in ("fail", "error"):
            continue
        sig = test.get("err_sig") or ""
        # the first failure's own words head the group (the masked form is the same for many groups)
        error = next((line.strip() for line in (test.get("error") or "").splitlines() if line.strip()), "")
        group = groups.setdefault(
            sig,
            {
                "err_sig": sig or None,
                "error": error[:300],
                "masked": normalise_error(test.get("error")),
                "tests": [],
            },
        )
        group["tests"].append(test)
    return list(groups.values())


def launch_page(runtime: Runtime, launch_id: int) -> dict[str, Any] | None:
    """One launch with its tests, failure groups and labels (the API's answer and the page's data)."""
    found = LaunchStore(runtime.store).get(launch_id)
    if found is None:
        return None
    labels = LabelStore(runtime.store).for_failures(
        t["id"] for t in found["tests"] if t["verdict"] in ("fail", "error")
    )
    for test in found["tests"]:
        test["label"] = labels.get(test["id"])
    found["groups"] = failure_groups(found["tests"])
    return found


def trend(runtime: Runtime, pipeline: str | None, last: int) -> dict[str, Any]:
    """The last ``last`` launches of a pipeline, oldest first, each with its counts."""
    launches = LaunchStore(runtime.store).trend(pipeline=pipeline, last=last)
    return {
        "pipeline": pipeline,
        "launches": [
            {
                "id": launch["id"],
                "started_at": launch["started_at"],
                "commit": launch["commit"],
                "job_url": launch["job_url"],
                **{
                    k: launch["summary"].get(k)
                    for k in (
                        "tests",
                        "passed",
                        "failed",
                        "skipped",
                        "pass_rate",
                        "duration_s",
                        "new",
                        "recurring",
                        "regression",
                        "flaky",
                    )
                },
            }
            for launch in launches
        ],
    }


@router.get("/v1/launches", responses=ERRORS)
async def list_launches(
    runtime: RuntimeDep,
    pipeline: Annotated[str | None, Query(max_length=1000, description="only this pipeline's")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = PAGE,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> dict[str, Any]:
    """CI jobs recorded (``tcfl ci``, ``POST /v1/ingest``), newest first, with their counts."""
    store = LaunchStore(runtime.store)
    items = await asyncio.to_thread(store.recent, pipeline=pipeline, limit=limit + 1, offset=offset)
    return {"items": items[:limit], "next_offset": offset + limit if len(items) > limit else None}


@router.get("/v1/launches/trend", responses=ERRORS)
async def launches_trend(
    runtime: RuntimeDep,
    pipeline: Annotated[
        str | None, Query(max_length=1000, description="default: launches without one")
    ] = None,
    last: Annotated[int, Query(ge=1, le=500)] = TREND_LAUNCHES,
) -> dict[str, Any]:
    """Pass rate, failures and new / recurring / regression / flaky counts over a pipeline's launches."""
    return await asyncio.to_thread(trend, runtime, pipeline, last)


@router.get("/v1/launches/{launch_id}", responses={**ERRORS, 404: {"description": "No such launch"}})
async def get_launch(
    launch_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], runtime: RuntimeDep
) -> dict[str, Any]:
    """One CI job: every test (passes too) with verdict and duration, its failures grouped by
    signature, each with its triage, history verdict (first bad commit) and label."""
    found = await asyncio.to_thread(launch_page, runtime, launch_id)
    if found is None:
        raise HTTPException(404, f"no launch with id {launch_id}")
    return found


class LabelIn(BaseModel):
    """A label: on one failure (``failure_id``, a launch test's id) or on a group (``err_sig``)."""

    model_config = ConfigDict(extra="forbid")

    defect_type: str = Field(max_length=64, description="one of TCFL_DEFECT_TYPES")
    bug_url: str | None = Field(None, max_length=2000, description="the bug's link")
    comment: str | None = Field(None, max_length=10_000)
    failure_id: int | None = Field(None, ge=1, le=MAX_ID, description="one failure of a launch")
    err_sig: str | None = Field(None, pattern=SIG, description="every failure with this signature")
    site: str | None = Field(None, pattern=SIG, description="every failure ranked at this fault site")

    @model_validator(mode="after")
    def _one_target(self) -> LabelIn:
        if sum(x is not None for x in (self.failure_id, self.err_sig, self.site)) != 1:
            raise ValueError("give exactly one of failure_id, err_sig, site")
        if self.bug_url is not None and not self.bug_url.startswith(("http://", "https://")):
            raise ValueError("bug_url must be an http(s) link")
        return self


def add_label(runtime: Runtime, body: LabelIn) -> dict[str, Any]:
    """Store a label; ``ValueError`` for a defect type not in the configured list, ``LookupError``
    for a failure that does not exist."""
    types = runtime.settings.defect_type_list()
    if body.defect_type not in types:
        raise ValueError(f"defect_type must be one of: {', '.join(types)}")
    return LabelStore(runtime.store).add(
        body.defect_type,
        bug_url=body.bug_url or None,
        comment=(body.comment or "").strip() or None,
        err_sig=body.err_sig,
        site=body.site,
        failure_id=body.failure_id,
    )


@router.post("/v1/labels", status_code=201, responses={**ERRORS, 404: {"description": "No such failure"}})
async def create_label(body: LabelIn, runtime: RuntimeDep) -> dict[str, Any]:
    """Label a failure or a signature group (product bug, automation bug, system issue, ...)."""
    try:
        return await asyncio.to_thread(add_label, runtime, body)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/v1/labels", responses=ERRORS)
async def list_labels(
    runtime: RuntimeDep,
    err_sig: Annotated[str | None, Query(pattern=SIG)] = None,
    failure_id: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    undone: Annotated[bool, Query(description="include labels taken off")] = False,
) -> dict[str, Any]:
    """Labels, newest first: on a signature group or a failure when one is named."""
    items = await asyncio.to_thread(
        LabelStore(runtime.store).labels,
        err_sigs=[err_sig] if err_sig else [],
        failure_ids=[failure_id] if failure_id else [],
        undone=undone,
    )
    return {"items": items, "defect_types": runtime.settings.defect_type_list()}


@router.delete("/v1/labels/{label_id}", responses={**ERRORS, 404: {"description": "No such label"}})
async def undo_label(
    label_id: Annotated[int, PathParam(ge=1, le=MAX_ID)], runtime: RuntimeDep
) -> dict[str, Any]:
    """Take a label off (an automatic one too: it is not carried over to that failure again)."""
    found = await asyncio.to_thread(LabelStore(runtime.store).undo, label_id)
    if found is None:
        raise HTTPException(404, f"no label with id {label_id}")
    return found
