"""``jobarchive export`` run as a user runs it, on both databases: jobs recorded with
figures computed by hand, exported, read back with pyarrow as a Hive-partitioned
dataset, the same numbers as the usage every face reads (``queries.facts``), a failed
job's class and Kueue's figures read back by pyarrow and DuckDB, a day exported again
replaced, CSV too; and bad input refused in one line, exit status 2."""

import datetime
import json
import pathlib
import subprocess

import duckdb
import pytest

from jobarchive.core.efficiency import MEASURED, PodEfficiency
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.exporting import columns
from jobarchive.maintenance.summarising import summary_row
from jobarchive.reading.queries.facts import job_usage
from jobarchive.storage.kueue import Attempt
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from tests.support import rows
from tests.support.csv_readers import EXPORT_TYPES, duckdb_rows
from tests.support.exports import read_export
from tests.support.failures import classify, failure
from tests.support.queue_rows import attempt
from tests.support.small_archive import run


def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


OOM = "OOMKilled (exit code 137): the container used more memory than its limit"


@pytest.fixture
async def recorded(database: str, db_url: str) -> str:
    jobs = [
        # Before the window, finished in it: its life overlaps, but its day is the 19th.
        rows.job("early", name="early", gmt_created=at(19, 23), gmt_finished=at(20, 1)),
        # 2 GPUs for 2 h and 1 GPU for 1 h: 5 GPU-hours, 9 CPU-hours; 5 min queued.
        rows.job(
            "a",
            name="a",
            namespace="team-a",
            owner="alice",
            queue="research",
            status="Succeeded",
            gmt_created=at(20, 10),
            gmt_job_running=at(20, 10, 5),
            gmt_finished=at(20, 12, 5),
        ),
        # Across midnight: 4 GPUs from 22:10 to 02:00 (15.333 GPU-hours), failed; its
        # second pod never ran, so the gang never started.
        rows.job(
            "b",
            name="b",
            namespace="team-a",
            owner="bob",
            status="Failed",
            gmt_created=at(20, 22),
            gmt_job_running=at(20, 22, 10),
            gmt_finished=at(21, 2),
        ),
        # Running on 8 GPUs since 09:00: its hours to the export's time.
        rows.job(
            "c", name="c", namespace="team-b", gmt_created=at(21, 9), gmt_job_running=at(21, 9)
        ),
        rows.job("late", name="late", gmt_created=at(22, 0)),
    ]
    pods = [
        rows.pod(
            "a0",
            job_id="a",
            gpus=2,
            cpu_millis=4000,
            gmt_started=at(20, 10, 5),
            gmt_finished=at(20, 12, 5),
            status="Succeeded",
        ),
        rows.pod(
            "a1",
            job_id="a",
            gpus=1,
            cpu_millis=1000,
            replica_type="ps",
            gmt_started=at(20, 11, 5),
            gmt_finished=at(20, 12, 5),
            status="Succeeded",
        ),
        rows.pod(
            "b0",
            job_id="b",
            gpus=4,
            gmt_started=at(20, 22, 10),
            gmt_finished=at(21, 2),
            status="Failed",
            remark=OOM,
        ),
        rows.pod("b1", job_id="b", gpus=4, status="Pending"),
        rows.pod("c0", job_id="c", gpus=8, gmt_started=at(21, 9)),
    ]
    await Store().upsert(Job, jobs)
    await Store().upsert(Pod, pods)
    return db_url


def export(url: str, folder: pathlib.Path, *options: str) -> subprocess.CompletedProcess[str]:
    window = ("--since", "2026-11-20", "--until", "2026-11-22", "--to", str(folder))
    done = run(url, "export", *window, *options)
    assert done.returncode == 0, done.stderr
    return done


async def test_the_export_holds_each_job_of_the_window_with_usages_numbers(recorded, tmp_path):
    tmp_path = tmp_path / "export"
    done = export(recorded, tmp_path)
    assert done.stdout.startswith("Exported 3 jobs in 2 days to "), done.stdout
    found = read_export(tmp_path)
    assert sorted(found) == ["a", "b", "c"]
    assert {uid: str(row["date"]) for uid, row in found.items()} == {
        "a": "2026-11-20",
        "b": "2026-11-20",
        "c": "2026-11-21",
    }
    a, b, c = found["a"], found["b"], found["c"]
    assert (a["gpu_hours"], a["cpu_hours"], a["queue_wait_s"], a["replicas"]) == (5.0, 9.0, 300, 2)
    assert (a["queue"], a["owner"], a["status"], a["reason"], a["cluster"]) == (
        "research",
        "alice",
        "Succeeded",
        None,
        DEFAULT_CLUSTER,
    )
    assert (b["gpu_hours"], b["status"], b["reason"]) == (
        15.333,
        "Failed",
        "OOMKilled (exit code 137)",
    )
    assert b["finished"] == at(21, 2) and b["gang_wait_s"] is None
    assert c["status"] == "Running" and c["finished"] is None
    assert c["gpu_hours"] == round(8 * (c["exported_at"] - at(21, 9)).total_seconds() / 3600, 3)
    # The same figures as the usage rows of the window, which every face reads.
    usage = {row.job_uid: row async for batch in job_usage(at(20, 0), at(22, 0)) for row in batch}
    for uid in ("a", "b"):
        facts = usage[uid]
        assert (found[uid]["gpu_hours"], found[uid]["cpu_hours"]) == (
            facts.all_gpu_hours,
            facts.all_cpu_hours,
        )
        for field in ("queue_wait_s", "gang_wait_s", "reason", "replicas", "started", "status"):
            assert found[uid][field] == getattr(facts, field), field
    assert usage["c"].all_gpu_hours == pytest.approx(c["gpu_hours"], abs=0.01)
    # And as `jobarchive usage` counts them: team-a's jobs ran inside the window.
    window = ("--since", "2026-11-20", "--until", "2026-11-22")
    rolled = run(recorded, "usage", "--by", "namespace", *window, "-o", "json")
    [team_a] = [row for row in json.loads(rolled.stdout)["items"] if row["namespace"] == "team-a"]
    assert (team_a["jobs"], team_a["gpu_hours"]) == (2, a["gpu_hours"] + b["gpu_hours"])
    assert team_a["cpu_hours"] == a["cpu_hours"] + b["cpu_hours"]


def duckdb_parquet(folder: pathlib.Path) -> dict[str, dict[str, object]]:
    """The export's Parquet files as DuckDB reads them, one table by Hive partitions."""
    with duckdb.connect() as connection:
        connection.execute("SET TimeZone = 'UTC'")
        found = connection.execute(
            "SELECT * FROM read_parquet(?, hive_partitioning = true)",
            [str(folder / "*" / "*.parquet")],
        )
        names = [column[0] for column in found.description]
        return {row[0]: dict(zip(names, row, strict=True)) for row in found.fetchall()}


KUEUE_AND_CLASS = ("failure_class", *columns.KUEUE)


async def test_a_failed_jobs_class_and_kueues_figures_read_back_by_pyarrow_and_duckdb(
    recorded, tmp_path
):
    # A: created 10:00; Kueue reserved its quota at 10:02 (admitted 10:02:30), its pod
    # a0 (2 GPUs) started 10:05, a preemption ended the attempt at 11:00; reserved again
    # at 11:02, a1 started 11:05, finished 12:05. a0 counts whole in the attempt it
    # started in: 2 GPUs x 2 h = 4 preempted GPU-hours. Waits: quota 120 s; start
    # 150 s + 180 s; requeue 11:00 to 11:02, 120 s.
    await Store().upsert(
        Attempt,
        [
            attempt(
                "a-1",
                "a",
                "gpu-a",
                at(20, 10, 2),
                admitted_at=at(20, 10, 2) + datetime.timedelta(seconds=30),
                running_at=at(20, 10, 5),
                ended_at=at(20, 11),
                end_reason="Preempted",
            ),
            attempt(
                "a-2",
                "a",
                "gpu-a",
                at(20, 11, 2),
                admitted_at=at(20, 11, 2),
                running_at=at(20, 11, 5),
                ended_at=at(20, 12, 5),
                end_reason="Finished",
            ),
        ],
    )
    # B failed and was classified; C runs and never failed; none of them saw Kueue.
    await classify(failure("b", "OOMKilled", "team-a"))
    expected = {
        "a": (None, 2, 1, 4.0, 120.0, 330.0, 120.0),
        "b": ("OOMKilled", None, None, None, None, None, None),
        "c": (None, None, None, None, None, None, None),
    }
    parquet, csv = tmp_path / "parquet", tmp_path / "csv"
    export(recorded, parquet)
    export(recorded, csv, "--format", "csv")
    for found in (read_export(parquet), read_export(csv, "csv"), duckdb_parquet(parquet)):
        assert {
            uid: tuple(row[name] for name in KUEUE_AND_CLASS) for uid, row in found.items()
        } == expected
    by_csv = {
        row["job_uid"]: tuple(row[name] for name in KUEUE_AND_CLASS)
        for path in csv.glob("date=*/part-0.csv")
        for row in duckdb_rows(path, EXPORT_TYPES)
    }
    assert by_csv == expected


async def test_a_day_exported_again_is_replaced_and_csv_too(recorded, tmp_path):
    tmp_path = tmp_path / "export"
    export(recorded, tmp_path)
    export(recorded, tmp_path)
    assert len(read_export(tmp_path)) == 3
    export(recorded, tmp_path, "--format", "csv")
    assert sorted(path.name for path in tmp_path.glob("date=*/*")) == ["part-0.csv"] * 2
    assert sorted(read_export(tmp_path, "csv")) == ["a", "b", "c"]
    one = export(recorded, tmp_path, "--until", "2026-11-21", "--format", "csv")
    assert one.stdout.startswith("Exported 2 jobs in 1 day to "), one.stdout
    resumed = export(recorded, tmp_path, "--resume", "--format", "csv")
    assert "0 jobs in 0 days" in resumed.stdout and "2 days kept as written" in resumed.stdout
    # Resumed in the other format, the days are written again in it, each replacing its
    # day's file of the first.
    switched = export(recorded, tmp_path, "--resume")
    assert switched.stdout.startswith("Exported 3 jobs in 2 days"), switched.stdout
    assert sorted(path.name for path in tmp_path.glob("date=*/*")) == ["part-0.parquet"] * 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--since", "yesterday"], "--since: 'yesterday' is not a day (use 2026-11-29)"),
        (["--since", "2026-11-20T10:00:00Z"], "--since: '2026-11-20T10:00:00Z' is not a day"),
        (["--until", "2026-11-19"], "--until must be a later day than --since"),
        (
            ["--since", "2999-01-01", "--until", "2999-01-02"],
            "--since 2999-01-01 has not begun: no day of the window to export",
        ),
        (["--since", "1000-01-01"], "--since: 375,064 days, more than 3,660"),
        (["--to", ""], "--to: an empty path"),
        (["--to", "FILE"], "--to: FILE is a file, not a folder"),
        (["--to", "FILE/day"], "--to: cannot make FILE/day: Not a directory"),
        (["--to", "/sys"], "--to: /sys cannot be written"),
        (["--format", "xlsx"], "'xlsx' is not one of 'parquet', 'csv'"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(tmp_path, arguments, message):
    (tmp_path / "FILE").write_text("not a folder")
    given = {"--since": "2026-11-20", "--until": "2026-11-22", "--to": str(tmp_path / "out")}
    given.update(zip(arguments[::2], arguments[1::2], strict=True))
    words = [
        word.replace("FILE", str(tmp_path / "FILE")) for pair in given.items() for word in pair
    ]
    done = run(f"sqlite:///{tmp_path}/none.sqlite3", "export", *words)
    assert done.returncode == 2, done.stderr
    [error] = done.stderr.splitlines()
    assert error.startswith("Error: ") and message.replace("FILE", str(tmp_path / "FILE")) in error
    assert "Traceback" not in done.stderr


async def test_an_until_ahead_exports_to_today_and_a_resume_writes_today_again(recorded, tmp_path):
    today = datetime.datetime.now(datetime.UTC).date()
    since = today - datetime.timedelta(days=2)
    window = ["--since", str(since), "--until", str(today + datetime.timedelta(days=40))]
    first = run(recorded, "export", *window, "--to", str(tmp_path / "out"))
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines()[0] == (
        f"--until {today + datetime.timedelta(days=40)} is ahead: exported up to today "
        f"({today}, as it stands); run the command again later to write the days still to come"
    )
    assert " in 3 days " in first.stdout, first.stdout
    # Today's file was written before today ended: a resume writes it again.
    again = run(recorded, "export", *window, "--to", str(tmp_path / "out"), "--resume")
    assert " in 1 day " in again.stdout and "2 days kept as written" in again.stdout, again.stdout


def test_with_a_kubeconfig_it_says_it_reads_the_database(tmp_path):
    window = ["--since", "2026-11-20", "--until", "2026-11-22", "--to", str(tmp_path)]
    done = run(f"sqlite:///{tmp_path}/none.sqlite3", "--kubeconfig", "x", "export", *window)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "Error: --kubeconfig and --context are for the read commands (jobs, job, logs, "
        "events, stats, usage): this one works on the database"
    ]


def test_without_pyarrow_it_says_how_to_install_it(tmp_path):
    # A pyarrow that cannot be imported, first on the path: as on a machine without it.
    (tmp_path / "pyarrow").mkdir()
    (tmp_path / "pyarrow" / "__init__.py").write_text("raise ModuleNotFoundError(name='pyarrow')")
    window = ["--since", "2026-11-20", "--until", "2026-11-22", "--to", str(tmp_path / "out")]
    done = run(f"sqlite:///{tmp_path}/none.sqlite3", "export", *window, PYTHONPATH=str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: jobarchive export needs pyarrow: pip install 'jobarchive[export]'"
    ]


async def test_links_planted_in_the_folder_are_refused_and_their_targets_untouched(
    recorded, tmp_path
):
    out, victim = tmp_path / "out", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    (victim / "precious").write_text("kept")
    window = ("--since", "2026-11-20", "--until", "2026-11-22", "--to", str(out))

    def refused(*options: str) -> str:
        done = run(recorded, "export", *window, *options)
        assert done.returncode == 2, done.stderr
        [error] = done.stderr.splitlines()
        return error

    lock = out / ".jobarchive-export.lock"
    lock.symlink_to(victim / "made-by-the-export")
    assert (
        refused() == f"Error: --to: {lock} is a symbolic link: the export follows none; remove it"
    )
    assert not (victim / "made-by-the-export").exists()
    lock.unlink()

    day = out / "date=2026-11-20"
    day.symlink_to(victim, target_is_directory=True)
    assert refused() == f"Error: {day} is a symbolic link: the export follows none; remove it"
    assert sorted(path.name for path in victim.iterdir()) == ["precious"]
    day.unlink()

    day.mkdir()
    (day / "part-0.parquet").symlink_to(victim / "precious")
    assert refused("--resume").endswith(
        f"{day / 'part-0.parquet'} is a symbolic link: the export follows none; remove it"
    )
    assert refused().startswith(f"Error: {day / 'part-0.parquet'} is a symbolic link")
    assert (victim / "precious").read_text() == "kept"


async def test_a_jobs_efficiency_columns_read_back_weighted_null_where_unsummarised(
    recorded, tmp_path
):
    # a0: 2 GPUs x 2 h at 50%, one GPU never used, 4 CPUs at 25%, 1 kWh; a1: 1 GPU x
    # 1 h at 100%, 1 CPU at 100%. A: activity (4 x 0.5 + 1 x 1) / 5; idle 4 x 0.5;
    # never used 1 GPU x 2 h; CPU (8 x 0.25 + 1 x 1) / 9 CPU-hours; no memory figure.
    figures = {
        "a0": PodEfficiency(
            MEASURED, gpu_activity_mean=0.5, unused_gpus=1, cpu_efficiency=0.25, energy_joules=3.6e6
        ),
        "a1": PodEfficiency(
            MEASURED, gpu_activity_mean=1.0, unused_gpus=0, cpu_efficiency=1.0, energy_joules=0.0
        ),
    }
    await Store().upsert(
        Summary,
        [
            summary_row(
                {
                    "pod_id": uid,
                    "version": "10",
                    "job_id": "a",
                    "namespace": "kubeflow",
                    "name": uid,
                },
                found,
            )
            for uid, found in figures.items()
        ],
    )
    expected = {
        "a": (0.6, 2.0, 2.0, 1 / 3, None, 1.0),
        "b": (None,) * 6,
        "c": (None,) * 6,
    }
    parquet = tmp_path / "parquet"
    export(recorded, parquet)
    for found in (read_export(parquet), duckdb_parquet(parquet)):
        got = {uid: tuple(row[name] for name in columns.EFFICIENCY) for uid, row in found.items()}
        assert got.keys() == expected.keys()
        for uid, values in expected.items():
            assert got[uid] == pytest.approx(values)
