"""A module constant is off by one."""

RETRIES = 3
MAX_ATTEMPTS = 5


def attempts(retries):
    made = 0
    for _ in range(retries + 1):
        made += 1
    return made


def test_attempts():
    made = attempts(RETRIES)
    assert made == MAX_ATTEMPTS
