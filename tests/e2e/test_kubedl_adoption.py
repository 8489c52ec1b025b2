"""A database KubeDL created: the operator refuses it with one line until it is migrated,
then records into it with one row per uid, KubeDL's rows included."""

import asyncio
import pathlib

import pytest

from jobarchive.config import redact_url
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.mariadb import Databases
from tests.support.commands import jobarchive
from tests.support.legacy import KubeDLJob, create_kubedl_tables, insert_kubedl_rows, query
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")


@pytest.fixture
def kubedl_url(mysql_databases: Databases) -> str:
    url = mysql_databases.create("kubedl_e2e")
    create_kubedl_tables(url)
    return url


async def test_the_operator_refuses_kubedls_tables_in_one_line_until_migrated(
    cluster: Cluster, start_operator: OperatorFactory, kubedl_url: str
) -> None:
    operator = await start_operator(JOBARCHIVE_DB_URL=kubedl_url)
    assert await operator.exited() == 1
    assert operator.log().splitlines() == [
        f"jobarchive: the database {redact_url(kubedl_url)} cannot be recorded into: "
        "job_info.job_id, replica_info.pod_id has no unique key, as in the tables KubeDL "
        "creates: run `jobarchive migrate` once (docs/schema.md: Coming from KubeDL)"
    ]
    assert query(kubedl_url, "SHOW TABLES") == [("job_info",), ("replica_info",)]


async def test_after_migrating_the_operator_records_kubedls_jobs_in_their_one_row(
    cluster: Cluster, start_operator: OperatorFactory, kubedl_url: str, tmp_path: pathlib.Path
) -> None:
    job = await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="mnist"))
    uid, version = job["metadata"]["uid"], job["metadata"]["resourceVersion"]
    # KubeDL recorded it twice, at an older version.
    older = str(int(version) - 1)
    insert_kubedl_rows(
        kubedl_url,
        [KubeDLJob(uid, "mnist", older, namespace="kubeflow") for _ in range(2)],
        [],
    )
    # Through the operator's kubeconfig: the rows get the cluster's kube-system uid. In a
    # thread, so that the emulated API server (this loop's) can answer it.
    env = {"JOBARCHIVE_DB_URL": kubedl_url, "KUBECONFIG": str(tmp_path / "kubeconfig")}
    migrated = await asyncio.to_thread(jobarchive, "migrate", cwd=tmp_path, env=env)
    assert migrated.returncode == 0, migrated.stderr

    await start_operator(JOBARCHIVE_DB_URL=kubedl_url)
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])

    async def recorded() -> bool:
        rows = query(kubedl_url, "SELECT version FROM job_info WHERE job_id = %s", uid)
        return rows == [(version,)]

    await eventually(recorded)
    assert query(kubedl_url, "SELECT COUNT(*) FROM job_info") == [(1,)]
    assert query(kubedl_url, "SELECT cluster FROM job_info") == [(cluster.uid,)]
