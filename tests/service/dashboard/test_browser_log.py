"""The failure page with a 200,000-line log, in headless Chromium against a real ``tcfl serve``.

The log is the running example's (tests/data/running-example) with its five messages spread over
200,000 lines of unrelated output and its traceback at the end: the page must load fast, show the
matched lines and link them both ways to their statements, and hold its layout from 800 px up.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.service.dashboard.conftest import screenshot, start_server
from tests.service.dashboard.test_browser import axe_violations
from tests.service.helpers import EXAMPLE, Server, example_body

pytestmark = pytest.mark.browser

TOTAL = 200_000
SPREAD = (0, 50_000, 100_000, 150_000, 199_000)  # where the five messages go among the noise
WIDTHS = (800, 1280, 1920)
LONG_DIR = "suites/network/" + "/".join(f"very_long_component_name_{i}" for i in range(5))
# the running example's log statements, by the message they print (line numbers in test_example.py)
STATEMENT_OF_MESSAGE = {0: 22, 1: 10, 2: 11, 3: 2, 4: 16}


def big_log() -> tuple[str, dict[int, int]]:
    """The padded log, and each message's log line -> the script line of the statement it matched."""
    lines = (EXAMPLE / "failure.log").read_text().splitlines()
    messages, traceback = lines[:5], lines[5:]
    body = [f"[DEBUG] poll {i} ok" for i in range(TOTAL - len(lines))]
    for k, position in enumerate(SPREAD):
        body.insert(position, messages[k])
    full = body + traceback
    where = {full.index(message) + 1: STATEMENT_OF_MESSAGE[k] for k, message in enumerate(messages)}
    return "\n".join(full) + "\n", where


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, int, dict[int, int]]]:
    srv = start_server(tmp_path_factory.mktemp("dash-big"))
    try:
        log, where = big_log()
        script = (EXAMPLE / "test_example.py").read_text()
        body = example_body(
            scripts=[{"path": f"{LONG_DIR}/test_example.py", "content": script}],
            log=log,
            test_id=f"{LONG_DIR}/test_example.py::TestExample::test_division"[-200:],
        )
        response = httpx.post(f"{srv.url}/v1/triage", json=body, timeout=600)
        assert response.status_code == 200, response.text
        yield srv, response.json()["id"], where
    finally:
        srv.stop()


def in_view(page: Any, selector: str, pane: str) -> bool:
    """Whether the element is inside the scrolled pane's visible box and the window's."""
    return page.evaluate(
        """([sel, pane]) => {
            const el = document.querySelector(sel), box = el.closest(pane);
            const r = el.getBoundingClientRect(), b = box.getBoundingClientRect();
            return r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.top >= 0 && r.bottom <= innerHeight;
        }""",
        [selector, pane],
    )


def test_big_log_page_loads_fast_and_links_log_and_code(
    page: Any, big: tuple[Server, int, dict[int, int]]
) -> None:
    srv, triage_id, where = big
    url = f"{srv.url}/triage/{triage_id}"
    page.goto(f"{srv.url}/")  # warm the browser and the server's templates on another page
    loads = []
    for _ in range(3):
        page.goto(url)
        loads.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
    load_ms = statistics.median(loads)
    print(f"\nfailure page with a {TOTAL:,}-line log: load {load_ms:.0f} ms (median of 3: {loads})")
    assert load_ms < 1000, f"the page took {load_ms:.0f} ms to load"

    # trace states are visible; pruned code starts collapsed and opens
    assert (
        page.locator(".code .st-executed").count() > 0 and page.locator(".code .st-not_executed").count() > 0
    )
    pruned = page.locator("details.pruned").first
    assert pruned.get_attribute("open") is None and pruned.locator(".line").first.is_hidden()
    pruned.locator(":scope > summary").click()
    assert pruned.locator(".line").first.is_visible()

    # every matched log line is shown, highlighted, and names its statement
    for log_line, code_line in where.items():
        row = page.locator(f"#log-{log_line}")
        assert "matched" in (row.get_attribute("class") or "")
        assert row.locator(f"a.to-code[href='#L0-{code_line}']").count() == 1
    assert "ZeroDivisionError" in page.locator(".logrow.err").last.inner_text()
    assert f"{TOTAL:,} lines" in page.get_by_test_id("log-summary").inner_text()
    assert page.locator(".logrow").count() < 3000 and page.locator(".gap").count() >= 4

    # log -> code: clicking a matched line scrolls the code to its statement (in a pruned run too)
    for log_line, code_line in where.items():
        page.locator(f"#log-{log_line} .ltext").click()
        target = f"#L0-{code_line}"
        page.wait_for_function("sel => document.querySelector(sel).classList.contains('flash')", arg=target)
        assert in_view(page, target, ".code"), f"log line {log_line} -> code line {code_line}"

    # code -> log: a statement's link scrolls the log to the line it matched
    for log_line, code_line in where.items():
        page.locator(f"#L0-{code_line} a.to-log").click()
        page.wait_for_function(
            "sel => document.querySelector(sel).classList.contains('flash')", arg=f"#log-{log_line}"
        )
        assert in_view(page, f"#log-{log_line}", ".logview"), f"code line {code_line} -> log line {log_line}"

    # a gap loads the stored lines it hides; a line asked for by number is shown around it
    gap = page.locator(".gap").nth(1)
    first = int(gap.get_attribute("data-first") or 0)
    gap.locator("a[data-gap]").click()
    page.wait_for_selector(f"#log-{first}")
    assert page.locator(f"#log-{first} .ltext").inner_text().startswith("[DEBUG] poll")
    page.goto(f"{url}?log=123456#log-123456")
    assert page.locator("#log-123456").is_visible()
    screenshot(page, "failure-biglog-1280.png")


@pytest.mark.parametrize("width", WIDTHS)
def test_layout_holds_with_long_paths(page: Any, big: tuple[Server, int, dict[int, int]], width: int) -> None:
    srv, triage_id, _ = big
    page.set_viewport_size({"width": width, "height": 1000})
    for url, name in ((f"/triage/{triage_id}", "failure"), ("/", "list"), ("/?group=1", "groups")):
        page.goto(srv.url + url)
        overflow = page.evaluate("document.documentElement.scrollWidth - innerWidth")
        assert overflow <= 0, f"{url} overflows by {overflow}px at {width}px"
        clipped = page.evaluate(
            """() => [...document.querySelectorAll('.path, td.msg, h1, .rank-head, .logrow .ltext')]
                .filter(e => e.scrollWidth > e.clientWidth + 1)
                .map(e => e.className + ': ' + e.textContent.slice(0, 60))"""
        )
        assert clipped == [], f"{url} clips text at {width}px"
        screenshot(page, f"layout-{name}-{width}.png")
    # the two panes sit side by side from 800 px up
    page.goto(f"{srv.url}/triage/{triage_id}")
    code = page.locator(".code-pane").bounding_box()
    log = page.locator(".log-pane").bounding_box()
    assert code is not None and log is not None and log["x"] >= code["x"] + code["width"] - 1


@pytest.mark.parametrize("width", WIDTHS)
def test_big_pages_pass_axe_wcag_aa(page: Any, big: tuple[Server, int, dict[int, int]], width: int) -> None:
    srv, triage_id, _ = big
    page.set_viewport_size({"width": width, "height": 1000})
    for url in (f"/triage/{triage_id}", "/?group=1", "/?q=ZeroDivision&ranker=heuristic"):
        page.goto(srv.url + url)
        assert axe_violations(page) == [], f"{url} at {width}px"
