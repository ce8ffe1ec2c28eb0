"""A small system-test script whose runs produce the fixture logs in this folder."""
import logging
import sys

logger = logging.getLogger("suite.demo")


class ProbeError(RuntimeError):
    pass


def read_port(ports, name):
    logger.debug("reading port %s", name)
    return ports[name]


def probe(ports):
    logger.info("probing %d ports", len(ports))
    try:
        return read_port(ports, "eth9")
    except KeyError as exc:
        raise ProbeError("port eth9 is missing\nknown ports: %s" % sorted(ports)) from exc


def main():
    logger.info("Prepare testing...")
    logger.warning("link is slow:\n  rx=10\n  tx=12")
    ports = {"eth0": 1, "eth1": 2}
    try:
        probe(ports)
    except ProbeError:
        logger.exception("probe failed")
        raise


if __name__ == "__main__":
    fmt = sys.argv[1]
    logging.basicConfig(level=logging.DEBUG, format=fmt, datefmt=sys.argv[2] if len(sys.argv) > 2 else None)
    main()
