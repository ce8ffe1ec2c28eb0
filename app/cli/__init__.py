"""The `tcfl` command: each subcommand lives in its own module with a ``register`` function.

Only the module of the subcommand being run is imported (all of them for ``--help``), so a
command does not pay for the database, HTTP or model stacks it does not use.

Exit status: 0 done (for ``triage``: ranked with evidence), 3 ``triage`` ranked without evidence
(a guess, said so in a warning), 2 usage error, 1 failure.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

ONE_SHOT = ("triage", "trace")  # one analysis, then exit: no cyclic garbage collection at all
# commands that run once and exit: the interpreter's last collection need not walk what they made
FROZEN_AT_EXIT = (*ONE_SHOT, "ci")
SUBCOMMANDS = (
    "trace",
    "triage",
    "ci",
    "eval",
    "learn",
    "corpus",
    "batch",
    "serve",
    "bench",
    "ingest",
    "history",
    "retention",
)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NO_EVIDENCE = 3

EPILOG = (
    "exit status: 0 done (triage: ranked with evidence), 3 triage ranked without evidence, "
    "2 usage error, 1 failure"
)


class _Version(argparse.Action):
    """``--version``, answered without importing anything else."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from app import __version__

        print(f"tcfl {__version__}")
        parser.exit()


def build_parser(only: str | tuple[str, ...] | None = None) -> argparse.ArgumentParser:
    """The parser; ``only`` names the subcommand(s) to register (None: every one, for help)."""
    parser = argparse.ArgumentParser(
        prog="tcfl",
        description="Localize faults in failing test scripts from one failure log.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    names = SUBCOMMANDS if only is None else (only,) if isinstance(only, str) else only
    for name in names:
        try:
            module = importlib.import_module(f"app.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"app.cli.{name}":
                continue
            raise
        module.register(sub)
    return parser


def _subcommand(argv: list[str]) -> str | tuple[str, ...] | None:
    """What to register: the subcommand the arguments name first, none for ``--version``, else all."""
    if argv[:1] == ["--version"]:
        return ()
    if argv and argv[0] in SUBCOMMANDS:
        return argv[0]
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one command. The collector is paused while the start-up imports run (they allocate
    much and free little: collecting them is a noticeable part of a cold start), and for the whole
    of a one-shot command; a long-running one (serve, batch, eval) gets it back before it starts.

    Run as the program (no ``argv``), a one-shot command (and ``ci``) ends with ``gc.freeze()``:
    the interpreter's last collection at exit then skips the objects of every module imported
    (many, with the database stack loaded) and a CI job's kept parses, for memory the exit frees
    anyway. It runs after the command returned, so whatever it wrote (output, the stored result)
    is already complete.
    """
    program = argv is None
    argv = sys.argv[1:] if argv is None else argv
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(argv, collecting)
    finally:
        if program and argv[:1] and argv[0] in FROZEN_AT_EXIT:
            gc.freeze()
        if collecting:
            gc.enable()


def _run(argv: list[str], collecting: bool) -> int:
    parser = build_parser(_subcommand(argv))
    args = parser.parse_args(argv)
    if collecting and args.command not in ONE_SHOT:
        gc.enable()
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
