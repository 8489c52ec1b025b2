"""Storage: the schema, its dialects, the upserting store, the group-commit writer and
the classification of database errors. The only part that imports a database driver."""
