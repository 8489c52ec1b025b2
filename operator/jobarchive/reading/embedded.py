"""What a job's answer carries of other lists (its Events, its pods, which of them kept
a log tail), each only when the caller may read that list on its own: the review its
standalone read makes, of the resource its face names it as. A list the caller may not
read is left out and named in ``omitted``, with the grant it lacks, never answered as
an empty list (ARCHITECTURE.md, decision 14).

The JSON API and the console at ``/`` review every read as the virtual resource
``jobs.jobarchive.io`` (``AT_ROOT``); the aggregated API and the console under its
prefix as the archive's own (``ARCHIVED``), so that a reader granted ``archivedjobs``
alone sees a job without the Events and pods it may not list.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from jobarchive.reading import auth
from jobarchive.reading.handling import Caller
from jobarchive.reading.kube.discovery import EVENTS as ARCHIVED_EVENTS
from jobarchive.reading.kube.discovery import GROUP
from jobarchive.reading.kube.discovery import JOBS as ARCHIVED_JOBS
from jobarchive.reading.kube.discovery import PODS as ARCHIVED_PODS

# The fields of a job's detail (``queries.job_detail``) each list stands in.
EVENTS = "events"
PODS = "pods"
TAILS = "pods[].has_log_tail"
# What goes with a list left out: the cursor of its next page.
CURSORS = {EVENTS: "events_next_cursor", PODS: "pods_next_cursor"}


@dataclasses.dataclass(frozen=True)
class Lists:
    """The resources a face reviews the lists a job embeds as: what its standalone list
    of Events and of pods is reviewed as (``list``), and its read of a job's log tails
    (``get``)."""

    events: auth.Resource
    pods: auth.Resource
    logs: auth.Resource

    def reviews(self) -> tuple[tuple[str, str, auth.Resource], ...]:
        """Each embedded field with the verb and resource its own read reviews; the log
        tails' flags last, as they go with the pods."""
        return ((EVENTS, "list", self.events), (PODS, "list", self.pods), (TAILS, "get", self.logs))


AT_ROOT = Lists(auth.JOBS, auth.JOBS, auth.JOBS)
ARCHIVED = Lists(
    auth.Resource(GROUP, ARCHIVED_EVENTS.plural),
    auth.Resource(GROUP, ARCHIVED_PODS.plural),
    auth.Resource(GROUP, ARCHIVED_JOBS.plural, "log"),
)


@dataclasses.dataclass(frozen=True)
class Omission:
    """A field left out of an answer, and the grant whose want left it out."""

    field: str
    verb: str
    resource: auth.Resource
    namespace: str

    @property
    def reason(self) -> str:
        """Why, as RBAC names the grant: ``forbidden: list R in namespace N``."""
        return f"forbidden: {self.verb} {self.resource} in namespace {self.namespace}"

    def as_json(self) -> dict[str, str]:
        """``{"field": ..., "reason": ...}``, as ``omitted`` lists it."""
        return {"field": self.field, "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class Shown:
    """What a caller may see of a job's embedded lists: all but those ``omitted``."""

    omitted: tuple[Omission, ...] = ()

    def shows(self, field: str) -> bool:
        """Whether the field is kept."""
        return all(omission.field != field for omission in self.omitted)

    def of(self, detail: Mapping[str, Any]) -> dict[str, Any]:
        """A job's detail without what is omitted (the pods' ``has_log_tail`` flags, a
        list and its next page's cursor), naming each in ``omitted``; as it was when
        nothing is."""
        if not self.omitted:
            return dict(detail)
        kept = {
            key: value
            for key, value in detail.items()
            if not any(key in (field, CURSORS.get(field)) for field in self.fields())
        }
        if PODS in kept and not self.shows(TAILS):
            kept[PODS] = [_without(pod, "has_log_tail") for pod in kept[PODS]]
        kept["omitted"] = [omission.as_json() for omission in self.omitted]
        return kept

    def fields(self) -> tuple[str, ...]:
        """The fields omitted."""
        return tuple(omission.field for omission in self.omitted)


async def review(caller: Caller, namespace: str, lists: Lists) -> Shown:
    """Which of a job's embedded lists the caller may read in the job's namespace, each
    review made once (two fields reviewed alike share it); the log tails' flags are not
    reviewed when the pods they mark are left out."""
    decided: dict[tuple[str, auth.Resource], bool] = {}
    omitted: list[Omission] = []
    for field, verb, resource in lists.reviews():
        if field == TAILS and any(omission.field == PODS for omission in omitted):
            continue
        if (verb, resource) not in decided:
            decided[(verb, resource)] = await caller.may(verb, namespace, resource)
        if not decided[(verb, resource)]:
            omitted.append(Omission(field, verb, resource, namespace))
    return Shown(tuple(omitted))


async def shown_of(caller: Caller, detail: Mapping[str, Any], lists: Lists) -> dict[str, Any]:
    """A job's detail (``queries.job_detail``) as the caller may see it (``review``), in
    its namespace."""
    shown = await review(caller, detail["namespace"], lists)
    return shown.of(detail)


def _without(row: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name != key}
