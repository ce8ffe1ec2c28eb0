"""The `tcfl` command: each subcommand lives in its own module with a ``register`` function.

Exit status: 0 done (for ``triage``: ranked with evidence), 3 ``triage`` ranked without evidence
(a guess, said so in a warning), 2 usage error, 1 failure.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = ("trace", "triage", "eval", "corpus", "batch", "serve", "bench")

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NO_EVIDENCE = 3

EPILOG = (
    "exit status: 0 done (triage: ranked with evidence), 3 triage ranked without evidence, "
    "2 usage error, 1 failure"
)


def version() -> str:
    """The installed distribution's version; reads package metadata only, so `--version` stays fast."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("tcfl")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tcfl",
        description="Localize faults in failing test scripts from one failure log.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"tcfl {version()}")
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
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] in (["--version"], ["-V"]):
        # answered before the subcommands (and the database and HTTP stacks they import) load
        print(f"tcfl {version()}")
        return EXIT_OK
    parser = build_parser()
    args = parser.parse_args(args_in)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except UsageError as exc:
        print(f"tcfl: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a failure, not bad input: one line, no traceback on the terminal
        print(f"tcfl: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILURE


class UsageError(Exception):
    """Raised by subcommands for bad input: printed as one line, exit status 2."""


if __name__ == "__main__":
    raise SystemExit(main())
