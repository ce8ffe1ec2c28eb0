"""Runs unittest tests of one file under a line tracer; executed in a child process by corpus.py.

Usage: ``python corpus_runner.py SPEC_JSON`` where the spec names ``path`` (the test file),
``module`` (its dotted name, e.g. ``test.test_foo``), ``tests`` (``Class.method`` names) and
``result`` (where to write outcomes and executed lines). Only the standard library is used, so
the child starts fast and imports nothing of tcfl. Logging gets a common CI prefix format so the
captured output reads like a real failure log. Resource-gated CPython tests (network, audio,
...) are told their resource is off, so they skip instead of reaching out.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import threading
import time
import unittest
from types import FrameType
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Result(unittest.TextTestResult):
    """Verbose text result that also records each test's outcome and duration."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, dict[str, Any]] = {}
        self._started = 0.0

    def startTest(self, test: unittest.TestCase) -> None:
        self._started = time.perf_counter()
        super().startTest(test)

    def _record(self, test: unittest.TestCase, outcome: str) -> None:
        name = ".".join(test.id().split(".")[-2:])
        self.outcomes[name] = {"outcome": outcome, "seconds": time.perf_counter() - self._started}

    def addSuccess(self, test: unittest.TestCase) -> None:
        super().addSuccess(test)
        self._record(test, "pass")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "fail")

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error")

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skip")

    def addExpectedFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "skip")

    def addUnexpectedSuccess(self, test: unittest.TestCase) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "skip")


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    target, module_name = spec["path"], spec["module"]
    executed: set[int] = set()

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            executed.add(frame.f_lineno)
        return local

    def global_trace(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == target else None

    logging.basicConfig(level=logging.DEBUG, format=LOG_FORMAT, stream=sys.stderr)
    try:
        from test import support

        support.use_resources = []
    except ImportError:
        pass
    outcomes: dict[str, dict[str, Any]] = {}
    status = "ok"
    if spec.get("trace", True):
        threading.settrace(global_trace)
        sys.settrace(global_trace)
    try:
        module_spec = importlib.util.spec_from_file_location(module_name, target)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
        suite = unittest.defaultTestLoader.loadTestsFromNames(spec["tests"], module)
        runner = unittest.TextTestRunner(stream=sys.stderr, verbosity=2, resultclass=_Result)
        result = runner.run(suite)
        outcomes = result.outcomes  # type: ignore[attr-defined]
    except BaseException as exc:  # the mutant may break at import time; report, do not hide
        status = f"crash: {type(exc).__name__}: {exc}"
        logging.getLogger("runner").exception("test module failed to load")
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
    with open(spec["result"], "w", encoding="utf-8") as out:
        json.dump({"status": status, "outcomes": outcomes, "executed": sorted(executed)}, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
