"""The research harness (``tcfl_lab``) for the subcommands built on it: eval, learn, bench, corpus build.

The harness is no part of the product: it lives beside ``app`` in the source checkout and the
wheel leaves it out. An editable install maps only ``app`` and ``prompts`` onto the checkout, so
the harness is loaded from the folder beside the ``app`` package actually imported: a checkout's
``tcfl`` runs that checkout's harness, and an installed wheel says plainly that it has none.
Only those subcommands' run functions call this, so ``tcfl triage`` never imports the harness.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import app
from app.cli import UsageError

PACKAGE = "tcfl_lab"
MISSING = (
    "the evaluation harness is not installed: it ships with the source checkout, not the wheel "
    "(a checkout installed with `pip install -e .` has it)"
)


def checkout_harness() -> Path | None:
    """The harness package's folder beside ``app``, when ``app`` was imported from a checkout."""
    folder = Path(app.__file__).parent.parent / PACKAGE
    return folder if (folder / "__init__.py").is_file() else None


def load_harness() -> ModuleType:
    """The ``tcfl_lab`` package, after which its modules import as usual; UsageError if absent."""
    loaded = sys.modules.get(PACKAGE)
    if loaded is not None:
        return loaded
    folder = checkout_harness()
    if folder is None:
        try:  # installed some other way (its own path entry)
            return importlib.import_module(PACKAGE)
        except ModuleNotFoundError as exc:
            if exc.name != PACKAGE:
                raise
            raise UsageError(MISSING) from None
    # only the package is registered, the checkout's root never goes on sys.path: its tests/ and
    # scripts/ folders must not shadow anything
    spec = importlib.util.spec_from_file_location(
        PACKAGE, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None or spec.loader is None:
        raise UsageError(MISSING)
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[PACKAGE]
        raise
    return module
