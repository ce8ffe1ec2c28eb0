"""Runs each named unittest test of one file separately, traced, in one child process.

Usage: ``python history_runner.py SPEC_JSON``. The spec names ``path``, ``module``, ``tests``,
``result`` and optionally ``noise`` ({test: line}: raise ConnectionResetError the first time the
test reaches that line, the corpus's simulated flaky failure). Each test gets its own captured
output (verbose unittest lines, its traceback, logging and prints) and its own executed lines,
plus the lines the module ran at import. Standard library only, so the child starts fast.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import sys
import threading
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from types import FrameType
from typing import Any

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _Current(io.TextIOBase):
    """A stream that writes wherever the current test's buffer is (logging binds its stream once)."""

    def __init__(self) -> None:
        self.buffer_: io.StringIO = io.StringIO()

    def write(self, text: str) -> int:
        return self.buffer_.write(text)


def main(spec_path: str) -> int:
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    target, module_name = spec["path"], spec["module"]
    noise: dict[str, int] = spec.get("noise") or {}
    executed: set[int] = set()
    state: dict[str, Any] = {"stop_at": None}

    def local(frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            executed.add(frame.f_lineno)
            if frame.f_lineno == state["stop_at"]:
                state["stop_at"] = None
                raise ConnectionResetError(104, "Connection reset by peer")
        return local

    def global_trace(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename == target else None

    current = _Current()
    logging.basicConfig(level=logging.DEBUG, format=LOG_FORMAT, stream=current)
    try:
        from test import support

        support.use_resources = []
    except ImportError:
        pass
    results: dict[str, Any] = {}
    status = "ok"
    sys.settrace(global_trace)
    threading.settrace(global_trace)
    try:
        module_spec = importlib.util.spec_from_file_location(module_name, target)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    except BaseException as exc:  # the version may break at import time; report, do not hide
        status = f"crash: {type(exc).__name__}: {exc}"
    sys.settrace(None)
    module_lines = set(executed)
    if status == "ok":
        for name in spec["tests"]:
            executed.clear()
            current.buffer_ = io.StringIO()
            state["stop_at"] = noise.get(name)
            started = time.perf_counter()
            with redirect_stdout(current), redirect_stderr(current):
                suite = unittest.defaultTestLoader.loadTestsFromName(name, module)
                runner = unittest.TextTestRunner(stream=current, verbosity=2)
                sys.settrace(global_trace)
                try:
                    result = runner.run(suite)
                finally:
                    sys.settrace(None)
            if result.errors or result.failures:
                outcome = "error" if result.errors else "fail"
            elif result.skipped or result.expectedFailures or result.unexpectedSuccesses:
                outcome = "skip"
            else:
                outcome = "pass"
            results[name] = {
                "outcome": outcome,
                "seconds": time.perf_counter() - started,
                "executed": sorted(executed | module_lines),
                "output": current.buffer_.getvalue(),
                "noise": name in noise and state["stop_at"] is None,
            }
    threading.settrace(None)  # type: ignore[arg-type]
    with open(spec["result"], "w", encoding="utf-8") as out:
        json.dump({"status": status, "tests": results}, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
