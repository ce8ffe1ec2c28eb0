"""A helper's parameter default is the wrong expected total."""


def check_total(values, expected=10):
    total = sum(values)
    assert total == expected


def test_total():
    values = [1, 2, 3, 5]
    check_total(values)
