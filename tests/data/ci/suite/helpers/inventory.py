"""A local helper module the tests import: a stand-in for a device inventory."""

import logging

log = logging.getLogger(__name__)

PORTS = {
    "eth0": {"speed": 1000, "mtu": 1500},
    "eth1": {"speed": 10000},
}


def lookup_port(name):
    log.info("looking up port %s", name)
    port = PORTS[name]
    log.info("found port %s with %d fields", name, len(port))
    return port


def port_mtu(name):
    port = lookup_port(name)
    return port["mtu"]
