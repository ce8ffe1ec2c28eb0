"""The `tcfl` command: each subcommand lives in its own module with a ``register`` function."""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ("trace", "triage", "ci", "eval", "corpus", "batch", "serve", "bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcfl", description="Localize faults in failing test scripts from one failure log."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"app.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"app.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except UsageError as exc:
        print(f"tcfl: error: {exc}", file=sys.stderr)
        return 2


class UsageError(Exception):
    """Raised by subcommands for bad input: printed as one line, exit status 2."""


if __name__ == "__main__":
    raise SystemExit(main())
