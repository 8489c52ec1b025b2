"""Storage, the only part that imports a database driver.

- The schema: ``models`` (jobs, pods, Events, log tails, the usage roll-up), ``kueue``
  (Kueue's attempts, waits and queues' quotas), ``failed`` (failed jobs' classes), their
  stamping in ``stamped``; ``schema`` creates and upgrades them, ``migration`` adopts a
  KubeDL database, ``introspection`` reads what a database holds.
- The write path: ``writer`` (group commit) over ``batches`` (its bounded queue),
  ``store`` (guarded upserts, insert-once rows), ``daily`` (the usage roll-up kept in
  the same transaction), ``waiting`` (outages ridden out), ``failures`` (what a database
  error means).
- Connections: ``database`` (opening and closing), ``readpool`` (the read side's own),
  ``dialects`` (every MySQL/SQLite difference), ``failover`` (several hosts), ``tls``.
"""
