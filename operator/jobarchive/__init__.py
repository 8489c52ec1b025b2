"""jobarchive: keeps the history of ML training jobs, their pods and Events in a database.

The package is laid out along its one-directional data flows (ARCHITECTURE.md):

- ``bindings`` and ``app``: the Kopf bindings and the composition root that wires the
  parts; ``cli``: the command line ``jobarchive``.
- ``recording``: the write path. Watch events -> recorder -> attribution and the pure
  converters -> the storage's group-commit writer.
- ``storage``: models, schema, SQL dialects, the store, the writer, error classes.
- ``reading``: the read side: queries, the JSON API, the aggregated API, the console,
  authorization; never the write path.
- ``logtails``: the last lines of failed containers' logs.
- ``exporting``: exports for BI, written from the read side's rows.
- ``maintenance``: reconciliation with the cluster, retention, peering.

``__version__`` is the installed distribution's version (setuptools-scm, from the git tag).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("jobarchive")
except PackageNotFoundError:
    # Imported from a source tree that was never installed: no metadata to read.
    __version__ = "0+unknown"
