"""The CI-history pages in headless Chromium against a real ``tcfl serve``: what a person sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.service.dashboard.conftest import screenshot
from tests.service.dashboard.test_browser import axe_violations
from tests.service.dashboard.test_history_pages import history_triage, record_flaky
from tests.service.helpers import Server
from tests.service.test_history_surface_api import record_history

pytestmark = pytest.mark.browser


def test_tests_timeline_signatures_and_channel_bars(page: Any, server: Server, tmp_path: Path) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        key, logs = record_history(client, tmp_path)
        flaky = f"t.py::test_flaky_{key[-8:]}"
        record_flaky(client, tmp_path, flaky)
        triage = history_triage(client, key, logs)

    page.goto(f"{server.url}/tests")
    row = page.get_by_test_id("test-row").filter(has_text=flaky)
    assert row.get_by_test_id("flaky").is_visible()
    page.get_by_role("link", name=key).click()
    page.wait_for_url(f"**/tests/**{key[-8:]}")
    runs = page.get_by_test_id("run")
    assert runs.count() == 5
    assert [r.get_attribute("data-verdict") for r in runs.all()] == ["pass"] * 3 + ["fail"] * 2
    ticks = page.get_by_test_id("version-tick")
    assert ticks.count() == 2 and all(t.bounding_box()["height"] > 0 for t in ticks.all())
    fail_colour = runs.nth(4).evaluate("e => getComputedStyle(e).backgroundColor")
    pass_colour = runs.nth(0).evaluate("e => getComputedStyle(e).backgroundColor")
    assert fail_colour != pass_colour
    hunk = page.get_by_test_id("hunk")
    assert "return x * 2 + 1" in hunk.locator("ins").inner_text()
    screenshot(page, "history-test.png")

    page.get_by_role("link", name="Signatures").first.click()
    group = page.get_by_test_id("signature-row").filter(has_text=key)
    assert group.get_by_role("link", name=flaky).is_visible()

    page.goto(f"{server.url}/triage/{triage['id']}")
    assert page.get_by_test_id("triage-history").is_visible()
    bars = page.get_by_test_id("channel-bar")
    assert bars.count() >= 1
    widths = [b.locator(".chbar > span").bounding_box()["width"] for b in bars.all()]
    assert all(w > 0 for w in widths)  # every bar drawn is visible: empty ones are not rendered
    outer = bars.first.locator(".chbar").bounding_box()["width"]
    assert max(widths) == pytest.approx(outer - 2, abs=1.5)  # the page's largest term fills its bar
    screenshot(page, "history-triage-bars.png")
    for width in (1280, 800):
        page.set_viewport_size({"width": width, "height": 900})
        for url in ("/tests", f"/tests/{quote(key)}", "/signatures", f"/triage/{triage['id']}"):
            page.goto(server.url + url)
            assert axe_violations(page) == [], f"{url} at {width}px"
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{url} scrolls sideways at {width}px"
