"""The web console: the archive's jobs, one job's timeline and the fleet's statistics as
server-rendered HTML and SVG, served beside the API by the same application."""

from jobarchive.reading.console.mounts import serves
from jobarchive.reading.console.routes import Console

__all__ = ["Console", "serves"]
