"""The Kopf entry point: ``kopf run operator/main.py``.

Kopf imports this file before it starts anything: no event loop runs yet, no
login, no server. So this is where a run that cannot work is stopped, with one
line and exit status 1, before a file is created or a port opened: a bad setting
(a failure rules file that does not parse among them),
no cluster to watch (checked with a request of its own, on a loop of its own), or a
database it must not write to before ``jobarchive migrate`` (KubeDL's tables).
Only then are the handlers registered with Kopf, for the kinds the settings name;
the operator itself is built when Kopf starts it (``jobarchive.bindings``).
"""

import asyncio
import sys

from jobarchive import bindings, config
from jobarchive.infra import cluster, rules
from jobarchive.storage import database, schema

try:
    settings = config.load()
except config.ConfigError as exc:
    sys.exit(f"jobarchive: configuration error: {exc}")

try:
    rules.load_rules(settings.failure_rules_file)
except ValueError as exc:
    sys.exit(f"jobarchive: configuration error: JOBARCHIVE_FAILURE_RULES_FILE: {exc}")

try:
    asyncio.run(cluster.preflight())
except cluster.Unavailable as exc:
    sys.exit(f"jobarchive: {exc}, or try `make demo`, which needs no cluster")
except KeyboardInterrupt:
    # Ctrl-C while a silent server is waited for: the shell's status for it, no traceback.
    sys.exit(130)

try:
    asyncio.run(database.preflight(settings.db_url, settings.db_tls))
except schema.NotAdopted as exc:
    sys.exit(f"jobarchive: the database {settings.db_url_redacted} cannot be recorded into: {exc}")

bindings.register(settings)
