"""Two different failures and one pass, written so pytest, stestr and avocado can all run them."""

import logging
import unittest

from helpers.inventory import lookup_port, port_mtu

log = logging.getLogger(__name__)


class TestLinks(unittest.TestCase):
    def test_link_speed(self):
        log.info("checking link speed on %s", "eth0")
        speed = lookup_port("eth0")["speed"]
        log.info("link speed is %d", speed)
        if speed >= 10000:
            log.info("link is fast enough")
        else:
            log.warning("link is slower than expected")
        self.assertEqual(speed, 10000, "eth0 must run at 10G")

    def test_jumbo_mtu(self):
        log.info("checking jumbo frames on %s", "eth1")
        mtu = port_mtu("eth1")
        log.info("mtu is %d", mtu)
        self.assertGreaterEqual(mtu, 9000)

    def test_ports_known(self):
        log.info("checking the inventory")
        for name in ("eth0", "eth1"):
            self.assertIn("speed", lookup_port(name))
