"""Templates and static files of the dashboard, and the one helper that renders a page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request, Response
from fastapi.templating import Jinja2Templates

TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"

templates = Jinja2Templates(directory=TEMPLATES_DIR)


def _percent(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100.0 * value:.{digits}f} %"


def _ms(value: Any) -> str:
    return "–" if not isinstance(value, int | float) else f"{value:,.1f} ms"


def _seconds(value: Any) -> str:
    """A duration as people read it: milliseconds under a second, else seconds."""
    if not isinstance(value, int | float):
        return "–"
    return f"{1000 * value:.0f} ms" if value < 1 else f"{value:,.1f} s"


def _web_link(value: Any) -> bool:
    """Whether a stored URL (a job's, a bug's) may be a link on a page: http(s) only."""
    return isinstance(value, str) and value.startswith(("https://", "http://"))


templates.env.tests["web_link"] = _web_link
templates.env.filters["percent"] = _percent
templates.env.filters["seconds"] = _seconds
templates.env.filters["ms"] = _ms


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """A page, told whether keys are on (it then offers to forget the stored key)."""
    keys = request.app.state.runtime.settings.service_keys()
    return templates.TemplateResponse(
        request, name, {"keys_enabled": bool(keys), **context}, status_code=status
    )
