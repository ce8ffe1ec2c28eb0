import logging

logger = logging.getLogger(__name__)


def helper(values):
    logger.info("computing ratio for %s", values)
    return 3 / len(values)


def test_ratio():
    logger.warning("starting ratio test")
    print("values: {}")
    assert helper([]) == 1.0


def test_compare():
    logger.info("comparing")
    x = 1
    assert x == 2, "x should be 2"
