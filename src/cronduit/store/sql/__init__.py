"""The SQL the SQLite backend runs: schema, named queries, migrations."""
