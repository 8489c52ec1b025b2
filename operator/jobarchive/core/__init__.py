"""The pure helpers every part may use: no I/O, no asyncio, nothing else of the package.

- ``objects``: tolerant readers of untrusted Kubernetes JSON; ``kinds``: the registry of
  tracked job kinds; ``quantities``: resource quantities; ``accounting``: a pod's
  requests as usage counts them.
- ``rows``: the shapes and column widths of the stored rows, and what a cluster's name
  may be; ``times``: RFC 3339 times and durations; ``cutting``: a value cut to its
  column; ``bounded``: chunks and bounded maps.
- ``visible``: stored text made safe to show on a line; ``csvsafe``: the one CSV writer.

An import-linter contract keeps it so (pyproject.toml).
"""
