"""The script raises with "expected X, got Y"; the expected value comes from a helper."""


def reference_version():
    return "2.4.1"


def installed_version():
    parts = ["2", "4", "0"]
    return ".".join(parts)


def test_version():
    want = reference_version()
    got = installed_version()
    if got != want:
        raise AssertionError(f"expected {want}, got {got}")
