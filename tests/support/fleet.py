"""Two clusters' rows in one archive, for the tests of fleet reads (decision 36): the
same namespace and name recorded in both, and a job only one of them ran."""

import pathlib
from collections.abc import Sequence

import pytest

from jobarchive.config import DbTls
from jobarchive.infra import cluster as kube
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from testbed.cluster import Cluster, Reviews
from testbed.objects import Body
from testbed.operator import write_kubeconfig
from tests.support.console import at
from tests.support.history import History

EAST, WEST = "east", "west"
# The tokens of ``fleet_readers``.
ALICE, DAVE, BOB, ERIN = "alice-token", "dave-token", "bob-token", "erin-token"


def fleet_readers(cluster: Cluster) -> Reviews:
    """The cluster's reviews of four readers: alice reads team-a; dave reads team-a and
    may get cluster west; bob reads every namespace of the reading cluster and no other
    cluster; erin reads team-a of every cluster."""
    table = Reviews(cluster)
    for token, name in ((ALICE, "alice"), (DAVE, "dave"), (BOB, "bob"), (ERIN, "erin")):
        table.user(token, name)
        table.grant(f"user:{name}", "" if name == "bob" else "team-a")
    table.grant_clusters("user:dave", WEST)
    table.grant_clusters("user:erin")
    return table


async def two_clusters(history: History, east: str = EAST) -> dict[str, str]:
    """team-a/mnist in ``east``, and in west ten minutes later, each with a pod and an
    Event; team-b/bert in west only. The jobs' uids: ``east``, ``west``, ``bert``."""
    home = await _job(history, "mnist", "team-a", 0)
    west = await _job(history, "mnist", "team-a", 10)
    bert = await _job(history, "bert", "team-b", 20)
    await _move(east, [home])
    await _move(WEST, [west, bert])
    jobs = {"east": home, "west": west, "bert": bert}
    return {name: job["metadata"]["uid"] for name, job in jobs.items()}


def own_kubeconfig(monkeypatch: pytest.MonkeyPatch, path: pathlib.Path, api_server: str) -> None:
    """The process's own credentials: a kubeconfig at ``path`` for the API server, no pod's."""
    write_kubeconfig(path, api_server)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


async def _job(history: History, name: str, namespace: str, minute: float) -> Body:
    job = await history.job(name, namespace=namespace, created=at(minute))
    pod = await history.pod(job, "Worker", 0)
    await history.event(pod, "Scheduled", f"{name} scheduled", first=at(minute + 1))
    return job


async def _move(cluster: str, jobs: Sequence[Body]) -> None:
    """The jobs' rows, their pods' and their Events', as written by ``cluster``."""
    uids = [job["metadata"]["uid"] for job in jobs]
    for model in (Job, Pod, Event):
        await model.filter(job_id__in=uids).update(cluster=cluster)


async def fill_two_clusters(url: str) -> dict[str, str]:
    """The archive at ``url`` emptied and given ``two_clusters`` (east, west): their uids."""
    await db.open_database(url, encryption=DbTls())
    try:
        for table in ("job_info", "replica_info", "event_info"):
            await db.connection().execute_script(f"DELETE FROM {table}")
        async with History() as history:
            return await two_clusters(history)
    finally:
        await db.close_database()
