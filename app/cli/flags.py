"""Command-line flags of the triage options, built from the options record (``app/options.py``).

Each field of ``TriageOptions`` declares its help, metavar, type and choices once; a command adds
the flags of the fields it takes (``add_option_flags``) and gives what was asked back to
``resolve_options`` (``options_given``), so no flag's name, help or type is typed twice.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

from app.options import TriageOptions
from app.rankers import AUTO, ranker_names

_FIELDS = {f.name: f for f in fields(TriageOptions)}


def add_option_flags(parser: argparse.ArgumentParser, *names: str, **help_for: str) -> None:
    """Add the flags of the options ``names`` (``help_for`` overrides a field's help here)."""
    for name in names:
        meta = _FIELDS[name].metadata
        flag = flag_of(name)
        kwargs: dict[str, Any] = {"dest": name, "help": help_for.get(name, meta["help"])}
        default = _FIELDS[name].default
        if isinstance(default, bool):
            kwargs["action"] = "store_true"
        elif isinstance(default, tuple):
            kwargs.update(action="append", default=[], metavar=meta.get("metavar"))
        else:
            choices = (AUTO, *ranker_names()) if name == "ranker" else meta.get("choices")
            kwargs.update(choices=choices, metavar=meta.get("metavar"), type=meta.get("type"))
        parser.add_argument(flag, **kwargs)


def options_given(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The values of the options ``names`` as parsed (absent flags are None, ``resolve_options``'s
    "not given")."""
    return {name: getattr(args, name, None) for name in names}


def flag_of(name: str) -> str:
    """The command-line flag of the option ``name``."""
    return _FIELDS[name].metadata.get("flag", "--" + name.replace("_", "-"))


MODEL_ONLY: tuple[str, ...] = tuple(n for n, f in _FIELDS.items() if f.metadata.get("model_only"))


# the flags that name the CI job (``app.ingest.job``): field, metavar, help
JOB_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("job_url", "URL", "the CI job's URL (default: from the CI's environment)"),
    ("commit", "SHA", "the commit the job tested (default: from the CI's environment)"),
    ("pipeline", "NAME", "the pipeline (project, workflow) the job belongs to"),
    ("job_id", "ID", "the job's id in its pipeline"),
    (
        "started_at",
        "TIME",
        "when the job started, ISO 8601 (default: the CI's, else the results file's, else now)",
    ),
)
JOB_FLAGS = tuple(name for name, _, _ in JOB_FIELDS)


def add_job_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that name the CI job, as ``tcfl ci`` and ``tcfl ingest`` take them; GitHub
    Actions', GitLab CI's and Jenkins' environment variables fill in what is not given."""
    for name, metavar, text in JOB_FIELDS:
        parser.add_argument(f"--{name.replace('_', '-')}", metavar=metavar, help=text)
    parser.add_argument(
        "--no-ci-env", action="store_true", help="do not read the CI's environment variables for the job"
    )


def job_given(args: argparse.Namespace) -> Any:
    """The job the flags and (unless ``--no-ci-env``) the CI's environment name; ``ValueError`` for
    a bad ``--started-at``."""
    import os

    from app.ingest.job import Job, from_env

    base = Job() if getattr(args, "no_ci_env", False) else from_env(os.environ)
    return base.given(**{name: getattr(args, name, None) for name in JOB_FLAGS})
