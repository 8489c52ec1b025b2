"""The geometry of a job's timeline: pure functions from rows to shapes, no I/O.

One shared time axis; above it a lane of Event marks (Warnings taller, and a guide
line down through the pods, so that what every pod was doing at that moment shows);
below it a lane of the job's Kueue attempts when it has any (``bands``); below that the
pods grouped by replica type, one bar each, from creation (pale: waiting to start)
through start to finish (coloured by outcome), a failed pod's reason beside its bar.

A large role cannot have a bar per pod and stay readable or light: a role of more than
``BARS_PER_ROLE`` pods is drawn as groups of pods that share an outcome, a failure
reason and, to within a time step, their creation, start and finish. The step starts
at a hundredth of the axis and doubles until the role fits in ``BARS_PER_ROLE`` rows,
and past the whole axis the reasons merge too, so a role of any size is at most that
many rows; each group's bar spans its earliest creation to its latest finish and says
how many pods it holds. Marks are grouped alike, by type, reason and where they fall.
"""

import dataclasses
import datetime
from collections.abc import Iterable, Sequence
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.reading.console.axis import Scale, Tick, axis, ticks
from jobarchive.reading.console.bands import BAND_LANE, Band, Preemption, attempt_times, bands

WIDTH = 1200
LABELS = 250
RIGHT = 16
AXIS = 22
LANE = 30
ROW = 16
BOTTOM = 8
BARS_PER_ROLE = 40
# Marks closer than this (in the drawing's units) with the same type and reason are one.
MARK_SPACING = 4.0
LABEL_CHARACTERS = 34
TITLE_CHARACTERS = 300
OUTCOMES = ("pending", "running", "succeeded", "failed", "stopped")


@dataclasses.dataclass(frozen=True)
class Pod:
    """What a bar needs of a pod."""

    name: str
    role: str
    outcome: str
    created: datetime.datetime
    started: datetime.datetime | None
    ended: datetime.datetime
    reason: str | None
    remark: str | None
    restarts: int
    restarted: datetime.datetime | None


@dataclasses.dataclass(frozen=True)
class Bar:
    """One pod's bar, or one group's: waiting from ``x`` to ``x_started`` (None: never
    started), running from there to ``x_end``; its pods' restarts, the last one's mark at
    ``x_restarted`` (a pod's bar only, when its time is known)."""

    y: float
    x: float
    x_started: float | None
    x_end: float
    outcome: str
    label: str
    reason: str | None
    title: str
    pods: int
    restarts: int
    x_restarted: float | None


@dataclasses.dataclass(frozen=True)
class Heading:
    """A replica type's heading row."""

    y: float
    role: str
    pods: int
    grouped: bool


@dataclasses.dataclass(frozen=True)
class Mark:
    """An Event, or Events of one type and reason close together, on the axis."""

    x: float
    warning: bool
    count: int
    title: str


@dataclasses.dataclass(frozen=True)
class Drawing:
    """Everything the template draws, in one coordinate system (``WIDTH`` wide)."""

    width: int
    height: float
    left: float
    right: float
    start: datetime.datetime
    end: datetime.datetime
    ticks: list[Tick]
    headings: list[Heading]
    bars: list[Bar]
    marks: list[Mark]
    lane_y: float
    rows_y: float
    grouped_roles: list[str]
    # Kueue's attempts (decision 43): their lane's top (None: no attempt), bands, marks.
    band_y: float | None = None
    bands: list[Band] = dataclasses.field(default_factory=list)
    preemptions: list[Preemption] = dataclasses.field(default_factory=list)


def outcome(status: str, in_cluster: bool, started: bool, finished: bool) -> str:
    """What a pod's bar is coloured by: succeeded, failed, stopped, running, pending."""
    if status == "Succeeded":
        return "succeeded"
    if status == "Failed":
        return "failed"
    if status == "Stopped" or not in_cluster or (finished and status != "Running"):
        return "stopped"
    return "running" if started else "pending"


def reason_of(remark: str | None) -> str | None:
    """The head of a failed pod's remark: ``OOMKilled (exit code 137)``."""
    if not remark:
        return None
    return remark.split(": ", 1)[0]


def pods_of(rows: Iterable[dict[str, Any]], now: datetime.datetime) -> list[Pod]:
    """Pods from the timeline query's rows; one still running ends ``now``."""
    pods = []
    for row in rows:
        created = row["gmt_created"]
        started, finished = row["gmt_started"], row["gmt_finished"]
        result = outcome(
            row["status"], bool(row["is_in_etcd"]), started is not None, bool(finished)
        )
        ended = finished or (now if row["is_in_etcd"] else max(created, started or created))
        reason = reason_of(row["remark"]) if result == "failed" else None
        pods.append(
            Pod(
                name=row["name"],
                role=row["replica_type"] or "-",
                outcome=result,
                created=created,
                started=started,
                ended=max(ended, created),
                reason=reason,
                remark=row["remark"],
                restarts=row["restarts"] or 0,
                restarted=row["gmt_restarted"],
            )
        )
    return pods


def layout(
    pods: Sequence[Pod],
    events: Sequence[dict[str, Any]],
    job_created: datetime.datetime,
    job_ended: datetime.datetime,
    per_role: int = BARS_PER_ROLE,
    attempts: Sequence[dict[str, Any]] = (),
) -> Drawing:
    """The timeline of a job's pods and Events, at most ``per_role`` bar rows a role,
    and its Kueue ``attempts`` (its detail's) in a lane of their own."""
    moments: list[datetime.datetime | None] = [job_created, job_ended]
    moments += attempt_times(attempts)
    for pod in pods:
        moments += [pod.created, pod.ended]
    for event in events:
        moments += [event["first_timestamp"], event["last_timestamp"]]
    start, end = axis(moments)
    scale = Scale(start, end, LABELS, WIDTH - RIGHT)
    lane_y = AXIS
    band_y = AXIS + LANE if attempts else None
    rows_y = AXIS + LANE + (BAND_LANE if attempts else 0)
    drawn, preemptions = bands(attempts, scale)
    headings, bars, grouped = [], [], []
    y = rows_y
    for role, members in _by_role(pods):
        groups = _groups(members, start, end, per_role)
        is_grouped = len(groups) < len(members)
        headings.append(Heading(y, role, len(members), is_grouped))
        if is_grouped:
            grouped.append(role)
        y += ROW
        for group in groups:
            bars.append(_bar(group, y, scale))
            y += ROW
    return Drawing(
        width=WIDTH,
        height=y + BOTTOM,
        left=scale.left,
        right=scale.right,
        start=start,
        end=end,
        ticks=ticks(start, end, scale),
        headings=headings,
        bars=bars,
        marks=marks(events, scale),
        lane_y=lane_y,
        rows_y=rows_y,
        grouped_roles=grouped,
        band_y=band_y,
        bands=drawn,
        preemptions=preemptions,
    )


def _by_role(pods: Sequence[Pod]) -> list[tuple[str, list[Pod]]]:
    roles: dict[str, list[Pod]] = {}
    for pod in pods:
        roles.setdefault(pod.role, []).append(pod)
    return sorted(roles.items(), key=lambda item: item[0].lower())


def _groups(
    pods: list[Pod], start: datetime.datetime, end: datetime.datetime, per_role: int
) -> list[list[Pod]]:
    """The pods one by one if they fit, else grouped as coarsely as it takes."""
    if len(pods) <= per_role:
        return [[pod] for pod in pods]
    span = (end - start).total_seconds()
    step = span / 100
    while True:
        with_reasons = step <= span
        found: dict[tuple[Any, ...], list[Pod]] = {}
        for pod in pods:
            key = (
                OUTCOMES.index(pod.outcome),
                (pod.reason or "") if with_reasons else "",
                _bucket(pod.created, start, step),
                -1 if pod.started is None else _bucket(pod.started, start, step),
                _bucket(pod.ended, start, step),
            )
            found.setdefault(key, []).append(pod)
        if len(found) <= per_role or step > 2 * span:
            return [found[key] for key in sorted(found)]
        step *= 2


def _bucket(moment: datetime.datetime, start: datetime.datetime, step: float) -> int:
    return int((moment - start).total_seconds() // step)


def _bar(group: list[Pod], y: float, scale: Scale) -> Bar:
    first = group[0]
    created = min(pod.created for pod in group)
    starts = [pod.started for pod in group if pod.started is not None]
    ended = max(pod.ended for pod in group)
    reasons = {pod.reason for pod in group if pod.reason}
    reason = (
        reasons.pop() if len(reasons) == 1 else (f"{len(reasons)} reasons" if reasons else None)
    )
    if len(group) == 1:
        label = first.name
        title = (
            f"{first.name} ({first.role}): {first.outcome}; created {_hms(first.created)}, "
            f"started {_hms(first.started)}, ended {_hms(first.ended)} UTC"
        )
        if first.restarts:
            title += f"; restarted {_times(first.restarts)}, the last at {_hms(first.restarted)}"
        if first.remark:
            title += f"; {first.remark}"
    else:
        names = ", ".join(pod.name for pod in group[:3])
        label = f"{len(group)} pods"
        title = (
            f"{len(group)} {first.role} pods, {first.outcome}: {names}, …; created from "
            f"{_hms(created)}, started from {_hms(min(starts) if starts else None)}, "
            f"ended by {_hms(ended)} UTC"
        )
    restarts = sum(pod.restarts for pod in group)
    if len(group) > 1 and restarts:
        title += f"; restarted {_times(restarts)} in all"
    last = first.restarted if len(group) == 1 and first.restarts else None
    return Bar(
        y=y,
        x=scale.x(created),
        x_started=scale.x(min(starts)) if starts else None,
        x_end=max(scale.x(ended), scale.x(created) + 1.0),
        outcome=first.outcome,
        label=clip(label, LABEL_CHARACTERS),
        reason=reason,
        title=clip(title, TITLE_CHARACTERS),
        pods=len(group),
        restarts=restarts,
        x_restarted=None if last is None else scale.x(last),
    )


def marks(events: Sequence[dict[str, Any]], scale: Scale) -> list[Mark]:
    """Each Event at its last occurrence; those of one type and reason that fall within
    ``MARK_SPACING`` of each other drawn as one, with their count."""
    groups: dict[tuple[bool, str, int], list[dict[str, Any]]] = {}
    for event in events:
        moment = event["last_timestamp"] or event["first_timestamp"]
        if moment is None:
            continue
        warning = event["type"] == "Warning"
        slot = int(scale.x(moment) // MARK_SPACING)
        groups.setdefault((warning, event["reason"], slot), []).append(event)
    found = []
    for (warning, reason, _), members in groups.items():
        first = members[0]
        moment = first["last_timestamp"] or first["first_timestamp"]
        title = (
            f"{first['type']} {reason} on {first['kind']} {first['obj_name']} at "
            f"{_hms(moment)} UTC: {first['message']}"
        )
        if len(members) > 1:
            title = f"{len(members)} Events; the first: {title}"
        found.append(Mark(scale.x(moment), warning, len(members), clip(title, TITLE_CHARACTERS)))
    # Warnings last, so that they are drawn over the others.
    return sorted(found, key=lambda mark: (mark.warning, mark.x))


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count:,} times"


def _hms(moment: datetime.datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
