"""Storage: the database engine, schema, migrations and the reads and writes of every record.

Only I/O lives here: the facts a record holds are computed by the analysis core before they are
stored.
"""
