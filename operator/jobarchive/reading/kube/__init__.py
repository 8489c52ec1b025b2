"""The aggregated API ``archive.jobarchive.io/v1``: the archive as Kubernetes objects
that stock kubectl lists, gets and describes (decision 28).

Importing the package imports only ``discovery``: the pure modules (``objects``,
``selectors``, ``tables``) are the CLI's in kubeconfig mode, which needs neither the
routes nor the database (decision 30), so ``Kube`` and ``statuses`` are imported when
first asked for."""

from typing import TYPE_CHECKING, Any

from jobarchive.reading.kube.discovery import PREFIX

if TYPE_CHECKING:
    from jobarchive.reading.kube.routes import Kube
    from jobarchive.reading.kube.status import statuses

__all__ = ["PREFIX", "Kube", "statuses"]


def __getattr__(name: str) -> Any:
    """``Kube`` (the routes) and ``statuses`` (their middleware), imported when asked."""
    if name == "Kube":
        from jobarchive.reading.kube.routes import Kube

        return Kube
    if name == "statuses":
        from jobarchive.reading.kube.status import statuses

        return statuses
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
