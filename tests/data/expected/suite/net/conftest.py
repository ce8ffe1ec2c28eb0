"""Fixtures of the net tests; none of them is used by test_ports."""

import pytest


@pytest.fixture
def vlan():
    return 100
