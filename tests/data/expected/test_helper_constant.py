"""A helper returns a wrong constant: the expected count is off."""


def count_items(items):
    return len(items)


def expected_count():
    # three fruits are listed below
    return 4


def test_count():
    items = ["apple", "pear", "plum"]
    assert count_items(items) == expected_count()
