"""`tcfl bench`: see app/bench.py."""

from app.bench import register

__all__ = ["register"]
