"""The SQL the PostgreSQL backend runs: schema, named queries, migrations."""
