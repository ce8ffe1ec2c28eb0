"""Fixtures shared by the suite's tests."""

import pytest


@pytest.fixture
def lab():
    return {"switch": "sw1", "ports": 48}


@pytest.fixture
def expected_ports(lab):
    ports = {"uplink": 2, "access": 46}
    ports["uplink"] = 4
    return ports


@pytest.fixture
def unrelated():
    return "not used by test_ports"
