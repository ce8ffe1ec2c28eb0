"""A class attribute holds the wrong expected status."""


def fetch_status(code):
    return {200: "ok", 404: "missing"}.get(code, "error")


class TestStatus:
    EXPECTED = "missing"

    def test_status(self):
        status = fetch_status(200)
        assert status == self.EXPECTED
