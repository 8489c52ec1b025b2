"""jobarchive: keeps the history of ML training jobs, their pods and Events in a database.

The package is laid out along the one-directional data flow of DESIGN.md:
``handlers`` (Kopf bindings) -> ``convert`` (pure) -> ``store`` (stamp, upsert).
"""
