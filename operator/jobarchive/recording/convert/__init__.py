"""Pure conversions from Kubernetes objects (plain dicts) to the fields of a row.

Nothing here does I/O or keeps state. Objects arrive as the API serves them,
which is to say untrusted: any field may be missing, null or of the wrong type.
A converter either returns a complete row or raises ``InvalidObject`` with a
reason; it never raises anything else on any input.
"""

from jobarchive.recording.convert.common import InvalidObject, last_change, mark_gone
from jobarchive.recording.convert.events import InvolvedObject, event_row, involved_object
from jobarchive.recording.convert.jobs import job_row
from jobarchive.recording.convert.pods import (
    IntermediateLink,
    NameLink,
    OwnerLink,
    pod_job_link,
    pod_row,
)

__all__ = [
    "IntermediateLink",
    "InvalidObject",
    "InvolvedObject",
    "NameLink",
    "OwnerLink",
    "event_row",
    "involved_object",
    "job_row",
    "last_change",
    "mark_gone",
    "pod_job_link",
    "pod_row",
]
