"""A tiny failing test whose log lines are also echoed as source by pytest's long tracebacks."""

import logging

LOG = logging.getLogger(__name__)


def check_total(values):
    print("checking the total of the values")
    LOG.warning("values received for the check")
    total = sum(values)
    if total > 10:
        print("the total is too large")
        logging.info("rejecting the oversized total")
    assert total == 6, "the total is wrong"


def test_total():
    print("starting the total test")
    LOG.warning("about to check the values")
    check_total([1, 2, 4])
