"""The research harness: evaluation, benchmark corpora, weight learning and timing.

It builds on the product (``app``) and is not part of it: the wheel ships ``app`` alone, and
the ``tcfl eval``, ``learn``, ``bench`` and ``corpus build`` subcommands load this package from
the source checkout beside ``app`` (see ``app.cli.harness``).
"""
