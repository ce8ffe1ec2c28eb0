"""Shared fixtures of the analysis tests."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from app.analysis.model import Analysis
from app.analysis.pipeline import analyze
from tests.analysis.snapshot_cases import cases


@pytest.fixture(scope="session")
def case_analysis() -> Callable[[str], Analysis]:
    """The default analysis (every variant, with explanations) of a case of snapshot_cases, by
    name: analysed once per session (per xdist worker), since the snapshot test and the
    parse-cache test each need every case's."""
    inputs = {name: (scripts, log, functions) for name, scripts, log, functions in cases()}

    @functools.cache
    def analysis(name: str) -> Analysis:
        scripts, log, functions = inputs[name]
        return analyze(scripts, log, log_functions=functions)

    return analysis
