"""A fixture returns the expected configuration with a wrong port."""

import pytest


def load_config(name):
    host = name.split(":")[0]
    return {"host": host, "port": 8080, "tls": False}


@pytest.fixture
def expected_config():
    config = {"host": "db", "tls": False}
    config["port"] = 8081
    return config


def test_config(expected_config):
    loaded = load_config("db:8080")
    assert loaded == expected_config
