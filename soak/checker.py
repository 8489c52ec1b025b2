"""The archive compared with the ground truth, one line per violation.

For every object the workload made:

- live at the end: exactly one row, holding its last state, in the cluster;
- deleted: one row, gone (``deleted=1``, ``is_in_etcd=0``; a job or pod that was not
  Succeeded or Failed is ``Stopped``, with a finish time), holding its last state if
  the deletion happened in healthy time, else any state from the last one it held
  for ``lag`` seconds of healthy time (``timeline``), which must have been seen; an
  object the operator never could have seen may have a row or not, but a row it has
  must hold one of its states;
- an Event carries its latest count and lastTimestamp by the same rules, and the job
  it is about; it must be stored only if its subject could be known: a job or a pod
  that has or must have a row, a launcher Job still in the cluster;
- nothing else: no row for a pod or Event of no job, for a batch Job, for a uid the
  soak never made; no uid twice.
"""

import dataclasses
from collections.abc import Iterable
from typing import Any

from soak.timeline import Timeline
from soak.truth import EVENTS, JOBS, PODS, UID_COLUMN, Row, Tracked, Truth
from testbed.mariadb import connect

TERMINAL = ("Succeeded", "Failed")
COLUMNS = {
    JOBS: ("name", "namespace", "kind", "status", "gmt_finished", "deleted", "is_in_etcd"),
    PODS: (
        "name",
        "namespace",
        "job_id",
        "status",
        "remark",
        "gmt_finished",
        "replica_type",
        "image",
        "deleted",
        "is_in_etcd",
    ),
    EVENTS: ("name", "obj_uid", "job_id", "kind", "reason", "count", "last_timestamp"),
}


class _Some:
    """Any value but NULL: a Stopped row's finish time is when the operator saw it go."""

    def __eq__(self, other: object) -> bool:
        return other is not None

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "a time"


SOME: Any = _Some()


def read_tables(server_url: str, database: str) -> dict[str, list[Row]]:
    """Every row of the three tables, the columns the checker compares."""
    tables: dict[str, list[Row]] = {}
    with connect(server_url, database=database) as conn, conn.cursor() as cursor:
        for table, columns in COLUMNS.items():
            cursor.execute(f"SELECT {', '.join((UID_COLUMN[table], *columns))} FROM {table}")
            names = [d[0] for d in cursor.description]
            tables[table] = [dict(zip(names, values, strict=True)) for values in cursor]
    return tables


@dataclasses.dataclass(frozen=True)
class Expectation:
    """What the row of one object may be, whether it must exist, and why."""

    required: bool
    candidates: list[Row]
    why: str


def final(table: str, row: Row, gone: bool) -> Row:
    """The row a state leaves, the object still in the cluster or gone."""
    result = dict(row)
    if table == EVENTS:
        return result
    result["deleted"] = int(gone)
    result["is_in_etcd"] = int(not gone)
    if gone and result["status"] not in TERMINAL:
        result["status"] = "Stopped"
        if result.get("gmt_finished") is None:
            result["gmt_finished"] = SOME
    return result


def differences(row: Row, expected: Row) -> list[str]:
    """``column stored (expected value)`` for each column that differs."""
    return [
        f"{column} {row.get(column)!r} (expected {value!r})"
        for column, value in expected.items()
        if value != row.get(column)
    ]


def _whose(uid: object, truth: Truth, timeline: Timeline) -> str:
    """What a uid stored in a row names, for the report: ``; <uid> is TFJob a/b (...)``."""
    named = truth.objects.get(uid) if isinstance(uid, str) else None
    if named is None:
        return ""
    state = "live" if named.deleted_at is None else "deleted"
    created = timeline.offset(named.states[0].since)
    return f"; {uid} is {named.label} ({state}, created at +{created:.1f} s)"


class Checker:
    """Compares the tables with the truth."""

    def __init__(self, truth: Truth, timeline: Timeline) -> None:
        self.truth = truth
        self.timeline = timeline
        # What the last check could hold the archive to, for the summary.
        self.coverage = ""

    def check(self, tables: dict[str, list[Row]], now: float) -> list[str]:
        """Every violation, one line each."""
        healthy = self.timeline.healthy(self.timeline.origin, now)
        by_uid: dict[str, list[tuple[str, Row]]] = {}
        for table, rows in tables.items():
            for row in rows:
                by_uid.setdefault(row[UID_COLUMN[table]], []).append((table, row))
        violations = []
        for uid, found in by_uid.items():
            if uid not in self.truth.objects:
                table, row = found[0]
                violations.append(
                    f"{table} row {uid} ({row.get('name')}): no object of the soak had this uid"
                )
        expectations: dict[str, Expectation] = {}
        for tracked in self.truth.objects.values():
            violations.extend(self._object(tracked, by_uid, healthy, now, expectations))
        owed = sum(e.required for e in expectations.values())
        healthy_time = sum(b - a for a, b in healthy)
        self.coverage = (
            f"{owed} objects owed a row, {len(expectations) - owed} not (never seen in healthy "
            f"time); healthy {healthy_time:.0f} s of {self.timeline.offset(now):.0f} s"
        )
        return violations

    def _object(
        self,
        tracked: Tracked,
        by_uid: dict[str, list[tuple[str, Row]]],
        healthy: list[tuple[float, float]],
        now: float,
        expectations: dict[str, Expectation],
    ) -> Iterable[str]:
        found = by_uid.get(tracked.uid, [])
        name = f"{tracked.label} (uid {tracked.uid})"
        if tracked.table is None:
            for table, _ in found:
                yield f"{name}: stored in {table}, but no job of a tracked kind owns it"
            return
        if len(found) > 1:
            yield f"{name}: {len(found)} rows"
        expectation = self._expect(tracked, healthy, now, by_uid, expectations)
        if not found:
            if expectation.required:
                want = expectation.candidates[-1]
                yield f"{name}: no row; expected {_show(want)} ({expectation.why})"
            return
        table, row = found[0]
        if any(not differences(row, candidate) for candidate in expectation.candidates):
            return
        closest = min(reversed(expectation.candidates), key=lambda c: len(differences(row, c)))
        wrong = [c for c in ("job_id", "obj_uid") if row.get(c) != closest.get(c, row.get(c))]
        others = "".join(_whose(row.get(column), self.truth, self.timeline) for column in wrong)
        yield f"{name}: {'; '.join(differences(row, closest))} ({expectation.why}{others})"

    def _expect(
        self,
        tracked: Tracked,
        healthy: list[tuple[float, float]],
        now: float,
        by_uid: dict[str, list[tuple[str, Row]]],
        expectations: dict[str, Expectation],
    ) -> Expectation:
        if tracked.uid in expectations:
            return expectations[tracked.uid]
        assert tracked.table is not None
        identity = {"name": tracked.name}
        if tracked.table != EVENTS:
            identity["namespace"] = tracked.namespace
        states = [{**identity, **state.row} for state in tracked.states]
        end = now if tracked.deleted_at is None else tracked.deleted_at
        ends = [state.since for state in tracked.states[1:]] + [end]
        seen = [
            self.timeline.must_see(state.since, until, healthy)
            for state, until in zip(tracked.states, ends, strict=True)
        ]
        if tracked.deleted_at is None:
            expectation = Expectation(True, [final(tracked.table, states[-1], False)], "live")
        else:
            at = f"deleted at +{self.timeline.offset(tracked.deleted_at):.1f} s"
            if self.timeline.must_see_at(tracked.deleted_at, healthy):
                first, required, why = len(states) - 1, True, f"{at}, in healthy time"
            elif any(seen):
                first = max(i for i, must in enumerate(seen) if must)
                required = True
                why = f"{at} unseen; state {first + 1} of {len(states)} was held in healthy time"
            else:
                first, required, why = 0, False, f"{at}; never held in healthy time"
            candidates = [final(tracked.table, state, True) for state in states[first:]]
            expectation = Expectation(required, candidates, why)
        if tracked.table == EVENTS and expectation.required:
            knowable = self._knowable(tracked.subject, healthy, now, by_uid, expectations)
            if not knowable:
                expectation = dataclasses.replace(
                    expectation, required=False, why=f"{expectation.why}; its subject unknowable"
                )
        expectations[tracked.uid] = expectation
        return expectation

    def _knowable(
        self,
        subject: Tracked | None,
        healthy: list[tuple[float, float]],
        now: float,
        by_uid: dict[str, list[tuple[str, Row]]],
        expectations: dict[str, Expectation],
    ) -> bool:
        """Whether the operator can tell which job an Event's subject belongs to."""
        if subject is None:
            return False
        # A job made and deleted while the operator could not see it is unknowable like
        # such a pod: its Events name a uid that no process ever learnt the namespace of.
        if subject.table in (JOBS, PODS):
            if subject.uid in by_uid:
                return True
            return self._expect(subject, healthy, now, by_uid, expectations).required
        return subject.live


def _show(row: Row) -> str:
    return ", ".join(f"{column}={value!r}" for column, value in row.items())
