"""jobarchive: keeps the history of ML training jobs, their pods and Events in a database.

The root holds the entry points and the wings; each layer imports only those below it
(ARCHITECTURE.md; pyproject.toml's layers contract):

1. ``bindings``: Kopf's handlers, the one module that imports Kopf.
2. ``app``: the composition root that wires the parts; ``cli``: the command line.
3. ``exporting``: exports for BI; ``maintenance``: reconciliation, retention, peering.
4. ``recording``: the write path; ``reading``: queries, the JSON and aggregated APIs, the
   console, authorization.
5. ``logtails``: the last lines of failed containers' logs.
6. ``storage``: models, schema, SQL dialects, the store, the group-commit writer.
7. ``infra``: the Kubernetes client, serving, certificates, metrics, log hygiene.
8. ``config``: the settings, read from the environment once.
9. ``core``: pure helpers (times, quantities, rows' shapes, safe text, CSV).

``__version__`` is the installed distribution's version (setuptools-scm, from the git tag).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("jobarchive")
except PackageNotFoundError:
    # Imported from a source tree that was never installed: no metadata to read.
    __version__ = "0+unknown"
