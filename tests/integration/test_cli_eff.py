"""``jobarchive eff`` on both databases (decision 45): a job's figures as its summaries
and pods weigh them, computed here by hand, within 80 columns; its advice; a job not
yet summarised said so; the JSON the same figures."""

import asyncio
import datetime
import json

import jsonschema  # type: ignore[import-untyped]  # the package ships no type information
import pytest

from jobarchive.config import DbTls
from jobarchive.core.efficiency import MEASURED, NO_DATA, PodEfficiency
from jobarchive.core.rows import SummaryRow
from jobarchive.maintenance.summarising import summary_row
from jobarchive.reading.kube.used import efficiency_detail, efficiency_schema, efficiency_status
from jobarchive.reading.wellused import EFFICIENCY
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from tests.support import rows
from tests.support.small_archive import run

START = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)
HOUR = datetime.timedelta(hours=1)


async def record(url: str) -> None:
    """A job of two pods: a master of 8 GPUs for 2 h at 60% with none idle, a worker of
    8 GPUs for 1 h at 20% with 2 never used; and a job of no summary."""
    await db.open_database(url, encryption=DbTls())
    try:
        for table in ("job_info", "replica_info", "pod_efficiency"):
            await db.connection().execute_script(f"DELETE FROM {table}")
        store = Store()
        for uid, name in (("job-eff", "llama-sft"), ("job-none", "unsummarised")):
            await store.upsert(Job, [rows.job(uid, name=name, namespace="team-a")])
        specs = (
            ("llama-sft-master-0", "Master", 2, 0.6, 0),
            ("llama-sft-worker-0", "Worker", 1, 0.2, 2),
        )
        found: list[SummaryRow] = []
        for name, replica, hours, active, unused in specs:
            await store.upsert(
                Pod,
                [
                    rows.pod(
                        f"uid-{name}",
                        name=name,
                        job_id="job-eff",
                        namespace="team-a",
                        replica_type=replica,
                        gpus=8,
                        cpu_millis=4000,
                        gmt_started=START,
                        gmt_finished=START + hours * HOUR,
                    )
                ],
            )
            figures = PodEfficiency(
                MEASURED,
                gpu_activity_mean=active,
                gpu_activity_peak=0.9,
                unused_gpus=unused,
                gpus_seen=8,
                cpu_efficiency=0.1,
            )
            found.append(
                summary_row(
                    {
                        "pod_id": f"uid-{name}",
                        "version": "10",
                        "job_id": "job-eff",
                        "namespace": "team-a",
                        "name": name,
                    },
                    figures,
                )
            )
        await store.upsert(Summary, found)
    finally:
        await db.close_database()


@pytest.fixture
def archive(db_url: str) -> str:
    asyncio.run(record(db_url))
    return db_url


def test_a_jobs_efficiency_fits_80_columns_with_its_hand_computed_figures(archive: str) -> None:
    shown = run(archive, "eff", "team-a/llama-sft", COLUMNS="80")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    # 16 + 8 GPU-hours; activity (16 x 0.6 + 8 x 0.2) / 24; idle 16 x 0.4 + 8 x 0.8.
    assert lines[0] == "GPU-hours 24.0, GPU activity 47%, idle GPU-hours 12.8"
    assert lines[1].startswith("GPUs never used 2 (2.0 GPU-hours)")
    assert "CPU efficiency 10%" in lines[2]
    cells = [[cell.strip() for cell in line.split("│")] for line in lines]
    assert ["Worker", "1", "20%", "6.4", "2", "10%", "-"] in cells
    assert ["llama-sft-master-0", "8", "60%", "90%", "-", "10%", "-", "-"] in cells
    # Advised per replica type: the master's eight GPUs were all used.
    assert "  Worker: 8 GPUs requested, 2 never used: request 6" in lines
    assert "  Master: CPU efficiency 10%: request fewer CPUs" in lines
    assert "  Worker: CPU efficiency 10%: request fewer CPUs" in lines


def test_the_json_is_the_same_figures_and_an_unsummarised_job_says_so(archive: str) -> None:
    answer = json.loads(run(archive, "eff", "team-a/llama-sft", "-o", "json").stdout)
    # The shape both APIs' documents give it.
    jsonschema.validate(answer, EFFICIENCY)
    # As an ArchivedJob's status holds it, and back.
    status = efficiency_status(answer)
    jsonschema.validate(status, efficiency_schema())
    assert status["idleGPUHours"] == 12.8 and "gpuActivityMean" in status["replicas"]["Master"]
    assert efficiency_detail(status) == answer
    assert (answer["gpu_hours"], answer["idle_gpu_hours"], answer["unused_gpus"]) == (24.0, 12.8, 2)
    assert answer["replicas"]["Master"]["gpu_activity_mean"] == 0.6
    assert [p["outcome"] for p in answer["per_pod"]] == [MEASURED, MEASURED]
    none = run(archive, "eff", "team-a/unsummarised")
    assert none.returncode == 0
    assert (
        none.stdout.strip()
        == "team-a/unsummarised: no pod of it has been summarised from Prometheus"
    )
    assert run(archive, "eff", "team-a/no-such-job").returncode == 1


def test_a_pod_without_data_is_counted_not_guessed(archive: str) -> None:
    async def no_data() -> None:
        await db.open_database(archive, encryption=DbTls())
        try:
            await Summary.filter(pod_name="llama-sft-worker-0").update(
                outcome=NO_DATA, gpu_activity_mean=None
            )
        finally:
            await db.close_database()

    asyncio.run(no_data())
    answer = json.loads(run(archive, "eff", "team-a/llama-sft", "-o", "json").stdout)
    assert (answer["unknown"], answer["gpu_activity_mean"]) == (1, 0.6)
    assert "1 of 2 pods have no data in Prometheus" in answer["advice"]
