"""The write path: Kopf's watch events become rows.

``jobarchive.bindings`` (Kopf's handlers) -> ``recorder`` -> ``attribution`` (which
job an object belongs to) and ``convert`` (pure) -> ``storage.writer``.
"""
