"""Launches in headless Chromium against a real ``tcfl serve``: eight CI jobs of a real pytest
suite ingested, the launches list, a launch page with its failure groups, labels put on a group
and on one failure with the page's forms, the group's carried over to the next job (uploaded with
the page's form), the trend charts, and the failure page's new lines."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tcfl_lab.launches import JOBS, KEYS, JobFiles, ingest
from tests.ci_tools import launch_jobs
from tests.service.dashboard.conftest import screenshot, start_server
from tests.service.dashboard.test_browser import axe_violations
from tests.service.helpers import Server

__all__ = ["launch_jobs"]
pytestmark = pytest.mark.browser
BUG = "https://bugs.example.com/SHOP-42"


@pytest.fixture(scope="module")
def jobs_server(
    tmp_path_factory: pytest.TempPathFactory, launch_jobs: list[JobFiles]
) -> Iterator[tuple[Server, list[dict[str, Any]]]]:
    server = start_server(tmp_path_factory.mktemp("launches"))
    try:
        with server.client() as client:
            answers = [
                ingest(client, job, ranker="heuristic", pipeline="shop/tests") for job in launch_jobs[:JOBS]
            ]
        yield server, answers
    finally:
        server.stop()


def test_launches_a_launch_and_a_label_carried_to_the_next_job(
    page: Any, jobs_server: tuple[Server, list[dict[str, Any]]], launch_jobs: list[JobFiles]
) -> None:
    server, answers = jobs_server
    page.goto(f"{server.url}/launches")
    rows = page.get_by_test_id("launch-row")
    assert rows.count() == JOBS
    assert [r.get_attribute("data-failed") for r in rows.all()] == ["2", "2", "3", "1", "1", "1", "1", "0"]
    screenshot(page, "launches-list.png")

    last = answers[-1]["launch_id"]
    page.get_by_role("link", name=f"#{last}").click()
    page.wait_for_url(f"**/launches/{last}")
    groups = page.get_by_test_id("failure-group")
    assert groups.count() == 2
    assert page.get_by_test_id("launch-test").count() == 4  # every test, passes too
    many = page.locator(f"[data-testid=failure][data-key='{KEYS['many']}']")
    assert many.get_attribute("data-kind") == "recurring"
    assert many.get_by_test_id("first-bad").inner_text() == launch_jobs[3].commit[:10]
    assert many.get_by_test_id("new-failure").is_visible()
    group = groups.filter(has=many)
    group.get_by_text("Label this group").click()
    form = group.get_by_test_id("group-label-form")
    form.get_by_label("Defect type").select_option("automation bug")
    form.get_by_label("Bug link").fill(BUG)
    form.get_by_test_id("label-group").click()
    page.wait_for_url(f"**/launches/{last}?saved=1#failures")
    assert many.get_by_test_id("label").inner_text() == "automation bug"
    assert many.get_by_test_id("bug-link").get_attribute("href") == BUG

    # one failure of the other group labelled on its own: its group mates stay new failures
    other = groups.filter(has_not=many).get_by_test_id("failure").first
    other_key = other.get_attribute("data-key")
    other.get_by_text("Label this failure", exact=True).click()
    other.get_by_label("Defect type").select_option("system issue")
    other.get_by_test_id("label-failure").click()
    page.wait_for_url(f"**/launches/{last}?saved=1#failures")
    labelled = page.locator(f"[data-testid=failure][data-key='{other_key}']")
    assert labelled.get_by_test_id("label").inner_text() == "system issue"
    assert labelled.get_by_test_id("auto-label").count() == 0
    screenshot(page, "launch-labelled.png")

    # the next job, uploaded with the dashboard's form: its failure carries the label, automatically
    page.goto(f"{server.url}/launches/upload")
    page.get_by_label("Results file").set_input_files(str(launch_jobs[JOBS].reportlog))
    page.get_by_label("Checkout archive (.tar.gz or .zip)").set_input_files(str(launch_jobs[JOBS].archive))
    page.get_by_label("Commit").fill(launch_jobs[JOBS].commit)
    page.get_by_label("Pipeline").fill("shop/tests")
    page.get_by_test_id("upload").click()
    page.wait_for_url("**/launches/*")
    carried = page.locator(f"[data-testid=failure][data-key='{KEYS['many']}']")
    assert carried.get_by_test_id("auto-label").is_visible()
    assert page.get_by_test_id("failure-group").count() == 1  # test_discount is fixed in job 9
    carried.get_by_test_id("undo-label").click()
    page.wait_for_load_state()
    assert (
        page.locator(f"[data-testid=failure][data-key='{KEYS['many']}']")
        .get_by_test_id("new-failure")
        .is_visible()
    )


def test_trend_charts_and_the_failure_s_new_lines(
    page: Any, jobs_server: tuple[Server, list[dict[str, Any]]]
) -> None:
    server, answers = jobs_server
    # the eight jobs (and job 9 where the other test uploaded it first), oldest on the left
    page.goto(f"{server.url}/launches/trend?pipeline=shop/tests&last=20")
    assert page.get_by_test_id("chart-pass-rate").get_by_test_id("point").count() in (JOBS, JOBS + 1)
    bars = page.get_by_test_id("chart-failures").get_by_test_id("bar")
    heights = [b.bounding_box()["height"] for b in bars.all()][:JOBS]
    assert (
        len(heights) == JOBS and heights[0] == 0 and max(heights) == heights[5] > 0
    )  # job 6: three failures
    kinds = page.get_by_test_id("chart-kinds").get_by_test_id("bar").all()
    # one bar per kind and launch: job 6 stacks a regression, a recurring and a flaky failure
    assert len(kinds) in (9, 10) and all(k.bounding_box()["height"] > 0 for k in kinds)
    screenshot(page, "launches-trend.png")
    launch = answers[2]  # job 3: the flaky network test
    flaky = next(t for t in launch["tests"] if t["test_id"].endswith("test_ping"))
    page.goto(f"{server.url}/triage/{flaky['triage_id']}")
    section = page.get_by_test_id("new-lines")
    assert "ConnectionError" in section.inner_text()
    page.get_by_test_id("only-new").check()
    shown = [r for r in page.locator(".logview .logrow").all() if r.is_visible()]
    assert shown and all("new" in (r.get_attribute("class") or "") for r in shown)
    assert page.locator("[role=tab][aria-selected=true]").count() in (0, 1)
    for url in (
        "/launches",
        f"/launches/{answers[-1]['launch_id']}",
        "/launches/trend?pipeline=shop/tests",
        "/launches/upload",
    ):
        page.goto(server.url + url)
        assert axe_violations(page) == [], url
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 0, f"{url} scrolls sideways"
