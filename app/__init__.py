"""tcfl: fault localization for failing system-level test scripts, from the script and one log."""

__version__ = "0.1.0"  # the package version (pyproject reads it from here)
