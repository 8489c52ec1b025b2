"""``jobarchive migrate`` cuts what an archive stored before the bounds to them, in place,
as the write path cuts it now; a value within its bound, counted in characters however
many bytes it takes, is left as it is."""

import json
import pathlib

from jobarchive.config import DbTls
from jobarchive.core.cutting import CUT_KEY
from jobarchive.core.rows import IMAGE_LENGTH, MESSAGE_LENGTH, RESOURCES_LENGTH
from jobarchive.storage import database as db
from jobarchive.storage import dialects
from jobarchive.storage.migration.trimming import Trimming
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed.mariadb import Databases
from tests.support import rows
from tests.support.commands import jobarchive

HUGE = 200_000
ROLES = {f"role-{n:05d}": {"replicas": 1, "resources": {"cpu": "1"}} for n in range(2_000)}


async def _grow() -> None:
    """One pod and one Event past every bound, and one of each within it in three-byte
    characters (more bytes than the bound, as many characters)."""
    store = Store()
    await store.upsert(Job, [rows.job("job-1")])
    await store.upsert(Pod, [rows.pod("pod-1"), rows.pod("pod-2", image="日" * IMAGE_LENGTH)])
    await store.upsert(
        Event, [rows.event("ev-1"), rows.event("ev-2", message="日" * MESSAGE_LENGTH)]
    )
    conn = db.connection()
    mark = dialects.of(conn).placeholder
    await conn.execute_query(
        f"UPDATE replica_info SET image = {mark}, resources = {mark} WHERE pod_id = 'pod-1'",
        ["i" * HUGE, json.dumps(ROLES)],
    )
    # SQLite's LENGTH and SUBSTR stop at a NUL: the NUL first, the rest past the bound.
    await conn.execute_query(
        f"UPDATE event_info SET message = {mark} WHERE event_id = 'ev-1'", ["\x00" + "m" * HUGE]
    )


async def test_values_past_their_bounds_are_cut_and_those_within_are_kept(database: str) -> None:
    await _grow()
    trimming = Trimming(db.connection(), 500)
    assert await trimming.oversized(Pod, dry_run=True) == {"image": 1, "resources": 1}
    assert await trimming.oversized(Pod, dry_run=False) == {"image": 1, "resources": 1}
    assert await trimming.oversized(Event, dry_run=False) == {"message": 1}
    assert await trimming.oversized(Pod, dry_run=True) == {}

    pods = {pod.pod_id: pod for pod in await Pod.all()}
    assert pods["pod-1"].image == "i" * (IMAGE_LENGTH - 1) + "…"
    fitted = json.loads(pods["pod-1"].resources)
    assert len(pods["pod-1"].resources) <= RESOURCES_LENGTH and CUT_KEY in fitted
    assert len(fitted) - 1 + int(fitted[CUT_KEY]) == len(ROLES)
    assert pods["pod-2"].image == "日" * IMAGE_LENGTH
    events = {event.event_id: event for event in await Event.all()}
    assert events["ev-1"].message == "\x00" + "m" * (MESSAGE_LENGTH - 2) + "…"
    assert events["ev-2"].message == "日" * MESSAGE_LENGTH


async def test_migrate_says_what_it_cut_and_a_second_run_finds_nothing(
    mysql_databases: Databases, tmp_path: pathlib.Path
) -> None:
    url = mysql_databases.create("trimming")
    await db.open_database(url, encryption=DbTls())
    try:
        await _grow()
    finally:
        await db.close_database()
    env = {"JOBARCHIVE_DB_URL": url}
    first = jobarchive("migrate", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "replica_info: cut image to its bound: 1" in first.stdout
    assert "replica_info: cut resources to its bound: 1" in first.stdout
    assert "event_info: cut message to its bound: 1" in first.stdout
    second = jobarchive("migrate", cwd=tmp_path, env=env)
    assert second.returncode == 0 and "Nothing to migrate" in second.stdout, second.stdout
