"""Test support shared across test packages: real servers on 127.0.0.1, not mocks."""
