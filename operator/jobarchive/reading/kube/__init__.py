"""The aggregated API ``archive.jobarchive.io/v1``: the archive as Kubernetes objects
that stock kubectl lists, gets and describes (decision 28)."""

from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.reading.kube.routes import Kube
from jobarchive.reading.kube.status import statuses

__all__ = ["PREFIX", "Kube", "statuses"]
