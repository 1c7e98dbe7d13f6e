"""Django's PostgreSQL backend kept on psycopg2, for a project that must not move to psycopg 3 (ENGINE = this package)."""
