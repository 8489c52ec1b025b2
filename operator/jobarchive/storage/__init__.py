"""Storage, the only part that imports a database driver: ``models`` (the schema),
``schema`` (creating and upgrading it), ``dialects`` (every MySQL/SQLite difference),
``store`` (guarded upserts and lookups), ``writer`` (group commit), ``failures``
(what a database error means), ``database`` (opening and closing)."""
