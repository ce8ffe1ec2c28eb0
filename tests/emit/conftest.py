"""The real CI tools' outputs on the small failing suite, shared by these tests (tests/ci_tools.py)."""

from tests.ci_tools import avocado_job, py_results, stestr_run, unittest_console

__all__ = ["avocado_job", "py_results", "stestr_run", "unittest_console"]
