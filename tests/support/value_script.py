"""A test that prints the values it computes, and its failure log: the values channel's fixture.

The store tests and the channel's own tests use the same script, so a run stored by one reads as the
other expects.
"""

PATH = "tests/test_value.py"
SCRIPT = """import time


def make(n):
    return n * 2


def test_value():
    a = make(3)
    b = make(5)
    print("a is", a, "at", time.time())
    print("b is", b)
    assert a + b == 14
"""
FAIL_LOG = """a is 6 at 1700000001.5
b is 10
Traceback (most recent call last):
  File "/ci/tests/test_value.py", line 13, in test_value
    assert a + b == 14
AssertionError
"""
