"""The expected port split comes from a fixture of a parent folder's conftest.py."""


def port_split(total, uplinks):
    return {"uplink": uplinks, "access": total - uplinks}


def test_ports(lab, expected_ports):
    split = port_split(lab["ports"], 2)
    assert split == expected_ports
