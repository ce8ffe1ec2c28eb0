"""End to end in headless Chromium against a real ``tcfl serve`` (uvicorn, SQLite in a temp dir)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.dashboard.conftest import API_KEY, example_files, screenshot
from tests.service.helpers import EXAMPLE, Server, example_body

pytestmark = pytest.mark.browser

EXPECTED = json.loads((EXAMPLE / "expected.json").read_text())
SCRIPT_PATH = "test_example.py"


def submit_running_example(page: Any, base: str, *, ranker: str = "heuristic") -> int:
    script, log = example_files()
    page.goto(f"{base}/submit")
    page.get_by_label("Path, as the failing run saw it").first.fill(SCRIPT_PATH)
    page.locator("#script_content_0").fill(script)
    page.get_by_label("Log of the failed run").fill(log)
    page.get_by_label("Level").select_option("block")
    page.get_by_label("k (elements to rank)").fill("3")
    page.get_by_label("Ranker").select_option(ranker)
    page.get_by_label("Extra log-function patterns").fill("Log.log")
    page.get_by_label("Test id (optional label)").fill("running-example")
    page.get_by_test_id("submit").click()
    page.wait_for_url(re.compile(r"/triage/\d+$"))
    return int(page.url.rsplit("/", 1)[1])


def pruned_lines(page: Any) -> set[int]:
    return {
        int(n)
        for n in page.locator("details.pruned .line:not(.blank)").evaluate_all(
            "ls => ls.map(l => l.dataset.line)"
        )
    }


def code_lines() -> set[int]:
    text = (EXAMPLE / "test_example.py").read_text().splitlines()
    return {n for n, line in enumerate(text, 1) if line.strip()}


def test_submit_rank_feedback_and_accuracy(page: Any, server: Server) -> None:
    triage_id = submit_running_example(page, server.url)
    result = httpx.get(f"{server.url}/v1/triage/{triage_id}").json()
    ranking = result["ranking"]

    items = page.get_by_test_id("rank-item")
    assert items.count() == len(ranking) == 3
    for item, expected in zip(items.all(), ranking, strict=True):
        assert f"#{expected['rank']}" in item.inner_text() and expected["id"] in item.inner_text()
    for expected in ranking:
        for line in range(expected["start_line"], expected["end_line"] + 1):
            row = page.locator(f"#L0-{line}")
            assert "ranked" in (row.get_attribute("class") or "")
            assert int(row.get_attribute("data-rank") or 0) <= expected["rank"]
        badge = page.locator(f"#L0-{expected['start_line']} .badge", has_text=f"#{expected['rank']}")
        assert badge.count() == 1
    assert "ZeroDivisionError: division by zero" in page.get_by_test_id("error-message").inner_text()

    # score bars draw their share under the CSP (no inline style): the top one full, the others less
    widths = page.locator("[data-testid=score] .scorebar > span").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().width / e.parentElement.clientWidth)"
    )
    scaled = [int(item.get_by_test_id("score").inner_text().split("/")[0]) for item in items.all()]
    assert len(widths) == 3 and abs(widths[0] - 1.0) < 0.02
    for width, score in zip(widths, scaled, strict=True):
        assert abs(width - score / 100) <= 0.06, (widths, scaled)  # 5 % steps

    # pruned lines are exactly the code lines the ranked variant (tplus) drops
    assert pruned_lines(page) == code_lines() - set(EXPECTED["enhanced"]["trace"])

    # log statements coloured by Algorithm 1's verdict; the matched log line on click
    for line in EXPECTED["L_exe"]:
        if line in EXPECTED["static_log_statements"]:
            assert page.locator(f"#L0-{line} details.log-executed").count() == 1
    for line in EXPECTED["L_nexe"]:
        assert page.locator(f"#L0-{line} details.log-not_executed").count() == 1
    for line in EXPECTED["non_static_log_statements"]:
        assert page.locator(f"#L0-{line} details.log-doubtful").count() == 1
    chip = page.locator("#L0-2 details.log summary")
    assert "log line 4" in (chip.get_attribute("title") or "")
    chip.click()
    popup = page.locator("#L0-2 details.log .pop")
    assert popup.is_visible() and "log line 4" in popup.inner_text()
    chip.click()
    why = page.locator("#L0-2 .why")
    assert why.is_hidden()
    page.get_by_label("Show why each line has its state").check()
    assert why.is_visible() and why.inner_text().startswith("log-match")
    screenshot(page, "failure-why-1280.png")
    page.get_by_label("Show why each line has its state").uncheck()
    for line in EXPECTED["error_statements"]:
        assert page.locator(f"#L0-{line} .frame").count() == 1
    assert page.locator(".code .frame.inner").count() == 1
    assert page.locator("#L0-17 .frame.inner").count() == 1  # the error line itself

    screenshot(page, "failure-1280.png")
    page.set_viewport_size({"width": 800, "height": 900})
    screenshot(page, "failure-800.png")
    page.set_viewport_size({"width": 1280, "height": 900})

    # feedback: mark the real faulty line by clicking its number, save, see it counted
    assert page.get_by_test_id("accuracy-cases").inner_text().startswith("No feedback")
    faulty = EXPECTED["faulty_lines"][0]
    page.locator(f"label[for=m0-{faulty}]").click()
    assert "1 line marked" in page.get_by_test_id("mark-count").inner_text()
    page.get_by_test_id("save-feedback").click()
    page.wait_for_url(re.compile(r"saved=1"))
    assert page.get_by_test_id("feedback-saved").is_visible()
    assert page.get_by_test_id("stored-mark").all_inner_texts() == [f"{SCRIPT_PATH}:{faulty}"]
    assert page.locator(f"#m0-{faulty}").is_checked()
    best = min(i["rank"] for i in ranking if i["start_line"] <= faulty <= i["end_line"])
    assert page.get_by_test_id("accuracy-cases").inner_text() == "1"
    for k in (1, 3, 5):
        assert page.get_by_test_id(f"hit-{k}").inner_text().startswith(f"{int(best <= k)}/1")

    page.goto(server.url + "/")
    row = page.locator("table.failures tbody tr", has=page.locator(f"a[href='/triage/{triage_id}']"))
    assert (
        SCRIPT_PATH in row.inner_text()
        and "heuristic" in row.inner_text()
        and ranking[0]["id"] in row.inner_text()
    )
    assert page.get_by_test_id("hit-3").inner_text().startswith(f"{int(best <= 3)}/1")
    screenshot(page, "list-1280.png")
    page.set_viewport_size({"width": 800, "height": 900})
    screenshot(page, "list-800.png")


def test_multi_file_tabs(page: Any, server: Server) -> None:
    script, _log = example_files()
    helper = "def unused_helper():\n    print('never')\n"
    body = example_body(
        scripts=[{"path": SCRIPT_PATH, "content": script}, {"path": "helpers.py", "content": helper}]
    )
    triage_id = httpx.post(f"{server.url}/v1/triage", json=body, timeout=60).json()["id"]
    page.goto(f"{server.url}/triage/{triage_id}")
    tabs = page.get_by_role("tab")
    assert tabs.all_inner_texts() == [f"{SCRIPT_PATH} · 3 ranked", "helpers.py"]
    assert page.locator("#file-1").is_hidden()
    tabs.first.focus()
    page.keyboard.press("ArrowRight")
    assert page.get_by_role("tab", name="helpers.py").get_attribute("aria-selected") == "true"
    assert page.locator("#file-1").is_visible() and page.locator("#file-0").is_hidden()
    assert page.locator("#L1-2 details.log-not_executed").count() == 1
    page.set_viewport_size({"width": 800, "height": 700})
    screenshot(page, "failure-tabs-800.png")


def test_keyboard_navigation(page: Any, server: Server) -> None:
    triage_id = submit_running_example(page, server.url)
    page.goto(f"{server.url}/triage/{triage_id}")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    assert page.evaluate("getComputedStyle(document.activeElement).left") != "-999px"

    def tab_to(selector: str, limit: int = 250) -> None:
        for _ in range(limit):
            page.keyboard.press("Tab")
            if page.evaluate("(s) => document.activeElement.matches(s)", selector):
                return
        pytest.fail(f"{selector} is not reachable with Tab")

    tab_to("#m0-3")
    outline = page.evaluate("getComputedStyle(document.querySelector('label[for=m0-3]')).outlineStyle")
    assert outline != "none", "the focused line number shows no focus ring"
    page.keyboard.press("Space")
    assert page.locator("#m0-3").is_checked()
    tab_to("#L0-10 details.log summary")
    page.keyboard.press("Enter")
    assert page.locator("#L0-10 details.log .pop").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#L0-10 details.log .pop").is_hidden()
    tab_to("[data-testid=save-feedback]")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"saved=1"))
    assert page.locator("#m0-3").is_checked()

    page.goto(f"{server.url}/submit")
    tab_to("#script_path_0", 40)
    page.keyboard.type("kb.py")
    page.keyboard.press("Tab")
    page.keyboard.type("print('hi')\n")
    tab_to("[data-testid=submit]", 60)
    page.keyboard.press("Enter")
    page.wait_for_load_state()
    assert "paste or upload the failure log" in page.get_by_test_id("form-errors").inner_text()
    assert page.evaluate("document.activeElement.id") == "form-errors"


def test_submit_errors_are_shown_on_the_form(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/submit")
    page.locator("#script_content_0").fill("print('x')\n")
    page.get_by_label("Log of the failed run").fill("boom\n")
    page.get_by_label("k (elements to rank)").fill("0")
    page.get_by_test_id("submit").click()
    errors = page.get_by_test_id("form-errors").inner_text()
    assert "give its path" in errors
    assert "Traceback" not in page.content()
    page.locator("#script_path_0").fill("a.py")
    page.get_by_test_id("submit").click()
    assert "k: Input should be greater than or equal to 1" in page.get_by_test_id("form-errors").inner_text()
    assert page.locator("#k").get_attribute("aria-invalid") == "true"
    assert page.locator("#script_content_0").input_value() == "print('x')\n"
    screenshot(page, "submit-errors-1280.png")
    page.set_viewport_size({"width": 800, "height": 900})
    screenshot(page, "submit-errors-800.png")


def test_batch_progress_updates_live(browser: Any, tmp_path: Path) -> None:
    """Page on a server with no worker; a second server's worker runs the batch; the bar follows."""
    ui = Server(f"sqlite:///{tmp_path / 'tcfl.db'}", tmp_path, workers_off=True).start()
    worker: Server | None = None
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        cases = [example_body(test_id=f"case-{i}") for i in range(6)]
        batch = httpx.post(f"{ui.url}/v1/batches", json={"cases": cases}, timeout=60).json()
        page = context.new_page()
        page.goto(ui.url + "/")
        item = page.locator(f"[data-poll-url='/v1/batches/{batch['id']}']")
        assert "0 of 6 finished" in item.inner_text()
        queued = context.new_page()
        queued.goto(f"{ui.url}/triage/1")
        assert "This triage is queued" in queued.locator(".notice").inner_text()
        assert queued.locator(".code").count() == 0  # nothing stored yet, and nothing computed for a view
        assert queued.get_by_test_id("rank-item").count() == 0
        queued.close()
        worker = Server(ui.database_url, tmp_path, worker_id="dash-worker").start()
        page.wait_for_function(
            "id => document.querySelector(`[data-poll-url='/v1/batches/${id}']`).dataset.status === 'done'",
            arg=batch["id"],
            timeout=120_000,
        )
        assert "6 of 6 finished (6 done, 0 failed)" in item.inner_text()
        item.get_by_role("link", name="Reload to see the results").click()
        page.wait_for_load_state()
        assert page.locator("table.failures .s-done").count() == 6
        assert item.locator("progress").evaluate("p => [p.value, p.max]") == [6, 6]
        assert page.locator(".nojs-only").is_hidden()
        screenshot(page, "list-batch-1280.png")
        page.set_viewport_size({"width": 800, "height": 900})
        screenshot(page, "list-batch-800.png")

        plain = browser.new_context(java_script_enabled=False)
        static = plain.new_page()
        static.goto(ui.url + "/")
        assert static.locator(".nojs-only").is_visible()
        assert "6 of 6 finished" in static.locator(".batch").first.inner_text()
        plain.close()
    finally:
        context.close()
        if worker is not None:
            worker.stop()
        ui.stop()


def test_api_key_asked_once(browser: Any, keyed_server: Server) -> None:
    base = keyed_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        response = page.goto(f"{base}/submit")
        assert response is not None and response.status == 401
        page.get_by_label("API key").fill("wrong")
        page.get_by_role("button", name="Continue").click()
        assert "not valid" in page.get_by_role("alert").inner_text()
        page.get_by_label("API key").fill(API_KEY)
        page.get_by_role("button", name="Continue").click()
        page.wait_for_url(f"{base}/submit")
        cookie = next(c for c in context.cookies() if c["name"] == "tcfl_api_key")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert "tcfl_api_key" not in page.evaluate("document.cookie")

        triage_id = submit_running_example(page, base)
        assert page.get_by_test_id("rank-item").count() == 3
        page.locator("label[for=m0-3]").click()
        page.get_by_test_id("save-feedback").click()
        page.wait_for_url(re.compile(r"saved=1"))
        assert page.get_by_test_id("accuracy-cases").inner_text() == "1"

        headers = {"X-API-Key": API_KEY}
        batch = httpx.post(f"{base}/v1/batches", json={"cases": [example_body()]}, headers=headers).json()
        page.goto(base + "/")
        assert page.get_by_label("API key").count() == 0
        item = page.locator(f"[data-poll-url='/batches/{batch['id']}/progress']")
        page.wait_for_function(
            "id => document.querySelector(`[data-poll-url='/batches/${id}/progress']`)"
            ".dataset.status === 'done'",
            arg=batch["id"],
            timeout=120_000,
        )
        assert "1 of 1 finished" in item.inner_text()
        assert page.locator(f"a[href='/triage/{triage_id}']").count() >= 1

        page.get_by_role("button", name="Forget API key").click()
        page.wait_for_load_state()
        assert page.get_by_label("API key").is_visible()
    finally:
        context.close()


def axe_violations(page: Any) -> list[str]:
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        pytest.skip("axe-playwright-python is not installed (pip install 'axe-playwright-python>=0.1.8')")
    tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
    results = Axe().run(page, options={"runOnly": {"type": "tag", "values": tags}})
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
    ]


def test_pages_pass_axe_wcag_aa_checks(page: Any, server: Server, keyed_server: Server) -> None:
    """axe-core's WCAG 2.1 A/AA rules (contrast, labels, names, ARIA) on every page, both widths."""
    triage_id = submit_running_example(page, server.url)
    page.locator("label[for=m0-3]").click()
    page.get_by_test_id("save-feedback").click()
    page.wait_for_url(re.compile(r"saved=1"))
    page.locator("#L0-2 details.log summary").click()
    urls = [f"/triage/{triage_id}", "/", "/?status=nonsense", "/submit?example=running"]
    for width in (1280, 800):
        page.set_viewport_size({"width": width, "height": 900})
        for url in urls:
            page.goto(server.url + url)
            assert axe_violations(page) == [], f"{url} at {width}px"
        page.goto(server.url + "/submit")
        page.get_by_test_id("submit").click()
        assert axe_violations(page) == [], f"submit errors at {width}px"
        page.goto(keyed_server.url + "/")
        assert axe_violations(page) == [], f"key form at {width}px"
