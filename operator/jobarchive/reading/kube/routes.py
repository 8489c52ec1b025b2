"""The aggregated API's routes: thin handlers over ``reading.handling.Reads`` (its turn,
budget and refusals), the objects, tables and selectors of this package, and Statuses
for every failure (decision 28). Discovery and the OpenAPI documents are ``fixed``'s.
"""

import dataclasses
import datetime
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web
from multidict import MultiDict, MultiMapping

from jobarchive.core.visible import QUOTED, visible
from jobarchive.reading import auth, embedded, queries
from jobarchive.reading.fleet import sees
from jobarchive.reading.handling import Caller, NotFound, Reads
from jobarchive.reading.kube import discovery, fixed, objects, selectors, status, tables
from jobarchive.reading.kube.discovery import GROUP, PREFIX, Kind
from jobarchive.reading.lists import Asked, Listing, Shape
from jobarchive.reading.params import PAGE, Clusters, check_namespace
from jobarchive.reading.parsing import parse, typed
from jobarchive.reading.queries import MAX_PAGE, BadQuery, Param, PodQuery

UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Parameters every Kubernetes client may send a list; those not named in ``_listed``
# change nothing here (an archive has no versions to wait for, nor a pretty printer).
LIST_PARAMS = (
    "limit",
    "continue",
    "fieldSelector",
    "labelSelector",
    "includeObject",
    "watch",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "timeout",
    "pretty",
)
# What any request may carry: the client's own deadline (kubectl's --request-timeout;
# the read side keeps its own) and a pretty printer's wish.
COMMON_PARAMS = ("timeout", "pretty")
GET_PARAMS = ("includeObject", "resourceVersion", *COMMON_PARAMS)
# What kubectl asks after a 404 (decision 28): in the JSON API's space, answered here.
NAMESPACE_CHECK = "/api/v1/namespaces/{namespace}"
ALL = "a list of every namespace"
INSTEAD = "name a namespace (kubectl -n NAMESPACE)"

Row = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Served:
    """One resource as served: its kind, its list, how the list's rows become objects
    (in one step), how ``get NAME`` finds the row within a scope of clusters (None when
    it does not), and whether its objects name their job (ArchivedPods: ``jobName``)."""

    kind: Kind
    listing: Listing[Any]
    shape: Shape
    find: Callable[[str, str, Clusters], Awaitable[Row | None]]
    named: bool = False


class Kube:
    """The aggregated API's routes over a read budget shared with the JSON API."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads
        self.served = {
            discovery.JOBS.plural: Served(
                discovery.JOBS, queries.IDENTIFIED_JOBS, objects.listed_job, _find_job
            ),
            discovery.PODS.plural: Served(
                discovery.PODS, queries.PODS, objects.listed_pod, _find_pod, named=True
            ),
            discovery.EVENTS.plural: Served(
                discovery.EVENTS, queries.EVENTS, objects.listed_event, _find_event
            ),
        }

    def mount(self, app: web.Application) -> None:
        """Add the discovery documents and the resources' routes to ``app``."""
        fixed.mount(app)
        # kubectl asks after a 404 whether the namespace exists, and reports the answer's
        # 404 instead of the object's; the cluster's API answers it behind the aggregator.
        app.router.add_get(NAMESPACE_CHECK, _no_namespaces)
        namespaced = f"{PREFIX}/namespaces/{{namespace}}"
        for plural, served in self.served.items():
            listed = self._guarded(plural, functools.partial(self._list, served=served))
            app.router.add_get(f"{PREFIX}/{plural}", listed)
            app.router.add_get(f"{namespaced}/{plural}", listed)
            got = self._guarded(plural, functools.partial(self._get, served=served))
            app.router.add_get(f"{namespaced}/{plural}/{{name}}", got)
        log = self._guarded(f"{discovery.JOBS.plural}/log", self._log)
        app.router.add_get(f"{namespaced}/{discovery.JOBS.plural}/{{name}}/log", log)
        app.router.add_get(f"{PREFIX}/stats", self._guarded("stats", self._stats))
        app.router.add_get(f"{namespaced}/stats", self._guarded("stats", self._stats))
        # Usage is a statistic: reviewed as ``stats``, so the readers' roles cover it.
        app.router.add_get(f"{PREFIX}/usage", self._guarded("stats", self._usage))
        app.router.add_get(f"{namespaced}/usage", self._guarded("stats", self._usage))

    def _guarded(
        self, resource: str, handler: Callable[[web.Request, Caller], Awaitable[web.Response]]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        plural, _, sub = resource.partition("/")
        reviewed = auth.Resource(GROUP, plural, sub)

        async def guarded(request: web.Request) -> web.Response:
            async def answer() -> web.Response:
                try:
                    return await handler(request, await self.reads.caller(request, reviewed))
                except Exception as exc:
                    return status.refused(self.reads.refusal(request, exc))

            return await self.reads.respond(request, answer)

        return guarded

    async def _list(self, request: web.Request, caller: Caller, served: Served) -> web.Response:
        shown = tables.wanted_format(request.headers.get("Accept", "*/*"))
        if shown is None:
            return _not_acceptable()
        query = request.query
        if query.get("watch", "false").lower() not in ("false", "0", ""):
            return status.response(405, "watch is not served: the archive is read by lists")
        include = _include(query)
        asked, capped = _listed(served, query, request.match_info.get("namespace"))
        # A namespace selected lists that namespace alone: its review is that one's.
        page = await self.reads.page(caller, asked, served.listing, served.shape, ALL, INSTEAD)
        items = page.items
        if served.named:
            await self._name_jobs(items)
        if served.kind == discovery.JOBS:
            await self._classify(items)
        headers = {}
        if capped and page.next_cursor is not None:
            more = f"at most {MAX_PAGE} {served.kind.plural} a page; more follow (continue)"
            headers["Warning"] = f'299 - "{more}"'
        if shown == "json":
            body = objects.list_of(served.kind, items, page.next_cursor)
        else:
            now = datetime.datetime.now(datetime.UTC)
            body = tables.table(served.kind, items, page.next_cursor, shown, include, now)
        return web.json_response(body, headers=headers)

    async def _get(self, request: web.Request, caller: Caller, served: Served) -> web.Response:
        shown = tables.wanted_format(request.headers.get("Accept", "*/*"))
        if shown is None:
            return _not_acceptable()
        include = _include(request.query)
        detail = served.kind == discovery.JOBS
        extra = queries.DETAIL_PARAMS if detail else ()
        values = parse(_without(request.query, GET_PARAMS), extra)
        namespace, name = _namespace(request) or "", request.match_info["name"]
        row = await self._found(caller, served, namespace, name)
        if detail:
            uid = row["job_id"]
            found = await self.reads.within(lambda: queries.job_detail(uid, **values))
            if found is None:
                raise NotFound(status.not_found(served.kind.plural, name))
            seen = await embedded.shown_of(caller, found, embedded.ARCHIVED)
            item = objects.job_with_detail(seen, {uid: found["name"]})
        elif served.named:
            item = objects.archived_pod(row)
            await self._name_jobs([item])
        else:
            item = objects.archived_event(row)
        if shown == "json":
            return web.json_response(item)
        now = datetime.datetime.now(datetime.UTC)
        return web.json_response(tables.table(served.kind, [item], None, shown, include, now))

    async def _found(self, caller: Caller, served: Served, namespace: str, name: str) -> Row:
        """The row ``get NAME`` answers, once the caller may get in the namespace, of the
        clusters the caller may read; NotFound, alike, for none and for a namespace or a
        cluster the caller may not read."""
        plural = served.kind.plural
        if not await caller.may("get", namespace):
            raise NotFound(status.not_found(plural, name))
        scope = await self.reads.clusters(caller)
        row = await self.reads.within(lambda: served.find(namespace, name, scope))
        if row is None or not sees(scope, row["cluster"]):
            raise NotFound(status.not_found(plural, name))
        return row

    async def _log(self, request: web.Request, caller: Caller) -> web.Response:
        values = parse(_without(request.query, COMMON_PARAMS), queries.LOG_PARAMS)
        namespace, name = _namespace(request) or "", request.match_info["name"]
        row = await self._found(caller, self.served[discovery.JOBS.plural], namespace, name)
        uid = row["job_id"]
        page = await self.reads.within(lambda: queries.job_log_tails(uid, **values))
        return web.json_response(page.as_json())

    async def _stats(self, request: web.Request, caller: Caller) -> web.Response:
        values = _in_path(request, queries.STATS_PARAMS)
        await caller.require("list", values["namespace"], "statistics", INSTEAD)
        scope = await self.reads.clusters(caller)
        counted = await self.reads.within(lambda: queries.stats(**values, clusters=scope))
        return web.json_response({"items": counted})

    async def _usage(self, request: web.Request, caller: Caller) -> web.Response:
        return await self.reads.usage(request, caller, _in_path(request, queries.USAGE_PARAMS))

    async def _classify(self, jobs: Sequence[objects.Object]) -> None:
        """Each failed ArchivedJob's failure class (``status.failureClass``): the
        page's, read at once."""
        statuses = {job["metadata"]["uid"]: job["status"]["phase"] for job in jobs}
        found = await self.reads.within(lambda: queries.failure_classes(statuses))
        for job in jobs:
            job["status"]["failureClass"] = found.get(job["metadata"]["uid"])

    async def _name_jobs(self, pods: Sequence[objects.Object]) -> None:
        """Each ArchivedPod's job named (``spec.jobName``): the page's, read at once."""
        uids = [pod["spec"]["jobUID"] for pod in pods]
        names = await self.reads.within(lambda: queries.job_names(uids))
        for pod in pods:
            pod["spec"]["jobName"] = names.get(pod["spec"]["jobUID"])


def _in_path(request: web.Request, table: tuple[Param, ...]) -> dict[str, Any]:
    """A statistic's parameters, its namespace the path's (None: all of them), not the
    query's."""
    values = parse(
        _without(request.query, COMMON_PARAMS), tuple(p for p in table if p.name != "namespace")
    )
    return {**values, "namespace": _namespace(request)}


def _namespace(request: web.Request) -> str | None:
    """The path's namespace (None: all), refused before any review of it when no
    namespace can be so named, as the query's is (``parsing.parse``)."""
    return check_namespace(request.match_info.get("namespace"))


async def _find_job(namespace: str, name: str, scope: Clusters) -> Row | None:
    """A uid names its incarnation (in the namespace); any other name its newest (of the
    clusters in ``scope``, as every find)."""
    place = await queries.job_place(name) if UID.fullmatch(name) else None
    if place is not None and place[0] == namespace:
        return {"job_id": name, "cluster": place[1]}
    return await queries.newest_named(namespace, name, scope)


async def _find_pod(namespace: str, name: str, scope: Clusters) -> Row | None:
    if UID.fullmatch(name):
        found = (await queries.list_pods(PodQuery(uid=name), 1)).items
        if found and found[0]["namespace"] == namespace:
            return found[0]
    return await queries.newest_pod(namespace, name, scope)


async def _find_event(namespace: str, name: str, scope: Clusters) -> Row | None:
    if UID.fullmatch(name):
        found = await queries.one_event(name)
        if found is not None and found["obj_namespace"] == namespace:
            return found
    return await queries.named_event(namespace, name, scope)


def _not_acceptable() -> web.Response:
    return status.response(
        406,
        "Accept: none of the media types asked for is served "
        "(application/json, or its Table: as=Table;g=meta.k8s.io;v=v1)",
    )


def _include(query: "MultiMapping[str]") -> str:
    include = query.get("includeObject", "Metadata")
    if include not in tables.INCLUDE_OBJECT:
        shown = ", ".join(tables.INCLUDE_OBJECT)
        raise BadQuery(f"includeObject: '{visible(include, limit=QUOTED)}' is not one of {shown}")
    return include


def _without(query: "MultiMapping[str]", names: Sequence[str]) -> "MultiDict[str]":
    return MultiDict((key, value) for key, value in query.items() if key not in names)


def _listed(
    served: Served, query: "MultiMapping[str]", namespace: str | None
) -> tuple[Asked[Any], bool]:
    """The list's request parsed once by its table, from a Kubernetes list's parameters:
    its own filters, the field selector's, the namespace of the path (checked with the
    rest, as its record is made), the limit and continue; and whether the page size was
    capped."""
    filters = {param.name for param in served.listing.params} - {"namespace"}
    unknown = sorted(set(query) - set(LIST_PARAMS) - filters)
    if unknown:
        known = ", ".join((*LIST_PARAMS, *sorted(filters)))
        raise BadQuery(f"unknown parameter '{visible(unknown[0], limit=QUOTED)}' (known: {known})")
    if query.get("labelSelector"):
        raise BadQuery("labelSelector: archived objects carry no labels; use fieldSelector")
    given: MultiDict[str] = MultiDict(
        (key, value) for key, value in query.items() if key not in LIST_PARAMS
    )
    for field in query.getall("fieldSelector", []):
        for name, value in selectors.filters(served.kind.plural, field):
            if name == "namespace" and namespace is not None:
                _same_namespace(namespace, value)
            else:
                given.add(name, value)
    limit, capped = _limit(query.getall("limit", []))
    for cursor in query.getall("continue", []):
        if cursor:
            given.add("cursor", cursor)
    values = typed(given, served.listing.params + PAGE)
    cursor = values.pop("cursor", None)
    if namespace is not None:
        values["namespace"] = namespace
    return served.listing.asked(values, limit, cursor), capped


def _same_namespace(path: str, selected: str) -> None:
    """A ``metadata.namespace`` selector beside the path's namespace: the same one, or
    a question no object can answer, refused as such."""
    if selected != path:
        raise BadQuery(
            f"fieldSelector: metadata.namespace='{visible(selected, limit=QUOTED)}' is not the "
            f"path's namespace '{visible(path, limit=QUOTED)}'"
        )


def _limit(given: Sequence[str]) -> tuple[int, bool]:
    """The page size a Kubernetes ``limit`` asks (none or 0: all, which is capped too),
    and whether it was capped at ``MAX_PAGE``."""
    if len(given) > 1:
        raise BadQuery(f"limit: given {len(given)} times; give it once")
    raw = given[0] if given else "0"
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise BadQuery(f"limit: '{visible(raw, limit=QUOTED)}' is not a number")
    asked = int(raw)
    if asked == 0 or asked > MAX_PAGE:
        return MAX_PAGE, True
    return asked, False


async def _no_namespaces(_: web.Request) -> web.Response:
    return status.response(400, "namespaces are the cluster's: this server serves no core API")
