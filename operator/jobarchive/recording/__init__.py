"""The write path: Kopf's watch events become rows.

``jobarchive.bindings`` (Kopf's handlers) -> ``recorder`` -> ``convert`` (pure) and
``attribution`` (which job an object belongs to; what waits for the answer), settled by
``settling`` with ``lookups`` -> ``outcomes`` (the rows handed to ``storage.writer``,
what became of each object said). ``admissions`` accumulates Kueue's Workloads into
attempts and waits, ``capacity`` ClusterQueues into quota history; ``priming`` lists the
live jobs before the watches begin.
"""
