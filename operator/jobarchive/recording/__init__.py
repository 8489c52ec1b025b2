"""The write path: Kopf's watch events become rows.

``handlers`` (the only module that imports Kopf) -> ``recorder`` -> ``attribution``
(which job an object belongs to) and ``convert`` (pure) -> ``storage.writer``.
"""
