"""jobarchive: keeps the history of ML training jobs, their pods and Events in a database.

The package is laid out along its one-directional data flows (ARCHITECTURE.md):

- ``recording``: the write path. Kopf bindings -> recorder -> attribution and the
  pure converters -> the storage's group-commit writer.
- ``storage``: models, schema, SQL dialects, the store, the writer, error classes.
- ``reading``: the read side. Queries, the HTTP API, the CLI; never the write path.
- ``maintenance``: reconciliation with the cluster, retention, peering.

``config``, ``kinds``, ``metrics`` and ``serving`` are shared by all of them.
"""
