"""Mining real test-code faults from a git history: fixes whose commit message holds the failure log.

``extract`` is pure (a commit message and diffs in, a failure log, faulty lines and a grade out);
``mine`` is the shell that reads a local clone with git and writes one benchmark case per fix.
"""
