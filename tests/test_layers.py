"""The package's layers: no module imports one of a higher layer, so no import cycle crosses them.

The analysis core is at the bottom, the shells (CLI, service, plugin) at the top; a lower layer
never reaches upward, not even through a lazy import inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app"

# lowest first; units on one row do not import each other
LAYERS: tuple[tuple[str, ...], ...] = (
    ("analysis",),
    ("settings",),
    ("options", "ingest", "mining"),  # the options record and the readers: only the core below them
    ("localize",),
    ("history",),
    ("rankers",),
    ("triage",),
    ("ci",),
    ("launch",),  # a CI job recorded as a launch: the stores are handed in by the shells
    ("store",),  # storage: I/O of the records the layers below compute
    ("emit",),
    ("service", "pytest_plugin"),
    ("cli",),
)
RANK = {unit: n for n, row in enumerate(LAYERS) for unit in row}


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "app" else None


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def _unit_of_file(path: Path) -> str:
    rel = path.relative_to(APP)
    return rel.parts[0].removesuffix(".py")


def test_every_unit_of_the_package_has_a_layer() -> None:
    units = {_unit_of_file(p) for p in APP.rglob("*.py") if p.name != "__init__.py" or p.parent != APP}
    assert units <= set(RANK), f"units without a layer: {sorted(units - set(RANK))}"


def test_no_module_imports_a_higher_layer() -> None:
    upward = []
    for path in sorted(APP.rglob("*.py")):
        if path.parent == APP and path.name == "__init__.py":
            continue
        here = _unit_of_file(path)
        for module in sorted(_imports(path)):
            there = _unit(module)
            if there is not None and there != here and RANK[there] >= RANK[here]:
                upward.append(f"{path.relative_to(APP.parent)} ({here}) imports {module} ({there})")
    assert not upward, "\n".join(upward)
