"""crontick's benchmark against its Python peers and plain-psycopg loops: `make bench`."""
