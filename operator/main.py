"""The Kopf entry point: ``kopf run operator/main.py``.

Importing the handlers registers them with Kopf. A bad setting stops the start
with one line naming it rather than a traceback.
"""

import sys

from jobarchive.config import ConfigError

try:
    import jobarchive.recording.handlers  # noqa: F401
except ConfigError as exc:
    sys.exit(f"jobarchive: configuration error: {exc}")
