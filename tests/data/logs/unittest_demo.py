import logging
import unittest

log = logging.getLogger("ut")


class TestLink(unittest.TestCase):
    def setUp(self):
        log.info("bringing link up")

    def test_speed(self):
        speed = {"eth0": 100}
        log.warning("measuring __init__ speed")
        print("__main__")
        self.assertEqual(speed["eth1"], 100)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    unittest.main()
