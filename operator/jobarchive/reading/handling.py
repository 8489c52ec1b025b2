"""What the JSON API and the web console share about a request: who the caller is and
what they may read, the turn a request waits for on the read pool in its caller's
flow (``reading.gate``), the use cases both faces answer (a page of a list, what is
read of a job the caller may see, usage rolled up within its time limit), and what
each failure answers.

Every face of the read side takes its input through ``parsing`` and the same tables,
runs the same use cases (``Reads.page``, ``Reads.job``) and maps a failure to the same
status and message (``Reads.refusal``); only the clothes differ (JSON, an object or an
HTML page). So a filter the API refuses, the console refuses with the same words, and a
caller the API turns away, the console does too.
"""

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypedDict, TypeVar

from aiohttp import web

from jobarchive.config import DEFAULTS
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.core.visible import QUOTED, visible
from jobarchive.infra.logs import shown
from jobarchive.infra.serving import SEND_TIMEOUT, send
from jobarchive.reading import accept, auth, gate, queries, requestheader, usage
from jobarchive.reading.fleet import Fleet
from jobarchive.reading.frontproxy import FrontProxy
from jobarchive.reading.gate import FairGate, Limits
from jobarchive.reading.ledger import OverBudget
from jobarchive.reading.lists import Asked, F, Listing, Shape
from jobarchive.reading.params import Clusters
from jobarchive.reading.queries import KnownKinds, Page
from jobarchive.storage import failures, readpool

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
DEFAULT_CONCURRENCY = DEFAULTS.api_concurrency
DEFAULT_FLOWS = Limits()
DEFAULT_USAGE_TIMEOUT = float(DEFAULTS.usage_timeout)
# The database stops a statement at its request's deadline; this much later the
# request is abandoned anyway, should an answer never come (a network that hangs).
BACKSTOP = 1.0


class Forbidden(Exception):
    """The caller may not read what the request asks for (403); the message says why."""


class NotFound(Exception):
    """No such thing, or none the caller may see (404); the message says which."""


class DuplicateAuthorization(Exception):
    """A request with more than one Authorization header, or a front proxy's user header
    given twice: which one a proxy checked or meant is unknowable, so none is believed
    (400)."""


WITHOUT_NAMESPACE = "a request without a namespace"
NAME_ONE = "name a namespace (?namespace=...)"


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who made a request, and the access control that knows what they may read."""

    identity: auth.Identity
    access: auth.Access
    # What the face the request came by reviews its reads as.
    resource: auth.Resource = auth.JOBS

    async def may(
        self, verb: str, namespace: str | None, resource: auth.Resource | None = None
    ) -> bool:
        """Whether the caller may ``verb`` the resource (the face's unless named) in
        ``namespace`` (None: in all)."""
        return await self.access.allowed(
            self.identity, verb, namespace or auth.ALL_NAMESPACES, resource or self.resource
        )

    async def require(
        self,
        verb: str,
        namespace: str | None,
        what: str = WITHOUT_NAMESPACE,
        instead: str = NAME_ONE,
    ) -> None:
        """Raise Forbidden unless the caller may; over all namespaces, the message says
        what covers them (``what``) and what to ask ``instead``."""
        if await self.may(verb, namespace):
            return
        # Named as RBAC names it, so that whoever grants access knows what to grant.
        denied = f"user {self.identity.username!r} may not {verb} {self.resource}"
        if namespace:
            raise Forbidden(f"{denied} in namespace {namespace!r}")
        raise Forbidden(f"{what} covers all namespaces, and {denied} in all of them: {instead}")


@dataclasses.dataclass
class _Held:
    """A request's read turn, once taken: held until its answer is sent; and the flow
    it is taken in (``Reads.caller`` names it)."""

    stack: contextlib.AsyncExitStack
    taken: bool = False
    flow: str = ""


_HELD: contextvars.ContextVar[_Held | None] = contextvars.ContextVar("held", default=None)


@dataclasses.dataclass(frozen=True)
class Refusal:
    """What a request that failed is answered: a status, a message for the caller, and
    the headers the status needs (``WWW-Authenticate``, ``Retry-After``)."""

    status: int
    message: str
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


# When to ask again after a refusal that is nobody's share (a review, the database).
RETRY = {"Retry-After": f"{math.ceil(DEFAULT_FLOWS.wait)}"}
# Who an anonymous caller's flow is (``--auth none``): the address the request came from.
ANONYMOUS_FLOW = "address {}"
# Every answer of the read side carries these, aiohttp's own 404 and 405 included
# (``secure``): what it shows is what one caller may read, so no cache keeps it, no
# browser guesses its type, and no page frames or fetches it.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


async def secure(_: web.Request, response: web.StreamResponse) -> None:
    """Give an answer about to be sent each of ``HEADERS`` it does not set itself."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)


class Budget(TypedDict, total=False):
    """What bounds the read side beside its access control (``Reads``' keywords)."""

    timeout: float
    concurrency: int
    narrowed: Callable[[], bool] | None
    flows: Limits
    usage_timeout: float
    send_timeout: float
    kinds: KnownKinds
    front_proxy: FrontProxy | None
    home: str


class Reads:
    """The read side as the API and the console use it: an access control, a query
    timeout, how many queries may run at once (the read pool's size) and how each
    caller's flow may queue for them (``flows``), the usage roll-up's own time limit,
    the kinds a filter may name, the cluster it runs in (``home``), and the use cases
    both answer."""

    def __init__(
        self,
        access: auth.Access,
        timeout: float = DEFAULT_TIMEOUT,
        concurrency: int = DEFAULT_CONCURRENCY,
        narrowed: Callable[[], bool] | None = None,
        flows: Limits = DEFAULT_FLOWS,
        usage_timeout: float = DEFAULT_USAGE_TIMEOUT,
        send_timeout: float = SEND_TIMEOUT,
        kinds: KnownKinds = queries.BUILTIN,
        front_proxy: FrontProxy | None = None,
        home: str = DEFAULT_CLUSTER,
    ) -> None:
        self.access = access
        self.fleet = Fleet(home, lambda most: self.within(lambda: queries.job_clusters(most)))
        self.gate = FairGate(concurrency, narrowed, flows)
        self.timeout = timeout
        self.usage_timeout = min(usage_timeout, timeout)
        self.send_timeout = send_timeout
        self.kinds = kinds
        # Whose front-proxy headers are believed (None: nobody's).
        self.front_proxy = front_proxy

    async def caller(self, request: web.Request, resource: auth.Resource = auth.JOBS) -> Caller:
        """Who sent the request (the front proxy's headers, else its bearer token), its
        reads reviewed as ``resource``; Unauthenticated when nobody known."""
        given = request.headers.getall("Authorization", [])
        if len(given) > 1:
            raise DuplicateAuthorization(f"{len(given)} Authorization headers; send one")
        try:
            proxied = self.front_proxy.identity(request) if self.front_proxy else None
        except requestheader.Ambiguous as exc:
            raise DuplicateAuthorization(str(exc)) from None
        identity = proxied or await self.access.authenticate(given[0] if given else None)
        held = _HELD.get()
        if held is not None:
            held.flow = _flow(request, identity, isinstance(self.access, auth.NoAuth))
        return Caller(identity, self.access, resource)

    async def respond(
        self, request: web.Request, answer: Callable[[], Awaitable[web.Response]]
    ) -> web.Response:
        """The answer sent by the handler itself, within ``send_timeout``, rather than by
        aiohttp after it, which waits for ever on a client that never reads; in the
        request's read turn (``held``), so that no more answers are held than may run."""
        async with self.held():
            return await send(request, await answer(), self.send_timeout)

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """A request's whole life, its answer's sending included: the read turn its first
        query takes (``within``) is given back only when the block ends, so that no more
        answers are in memory at once than queries may run (decision 16)."""
        async with contextlib.AsyncExitStack() as stack:
            token = _HELD.set(_Held(stack))
            try:
                yield
            finally:
                _HELD.reset(token)

    async def within(self, query: Callable[[], Awaitable[T]], seconds: float = 0.0) -> T:
        """The query's result, run in the request's read turn (taken now if it holds none);
        Busy when none comes in the caller's flow within its wait (``gate``),
        QueryTimeout past ``seconds`` (the read timeout when not given; reviews are not
        counted).

        The query is given uncalled, so that a request turned away never makes it.
        """
        held = _HELD.get()
        if held is None:
            async with self.gate.turn():
                return await _timed(query, seconds or self.timeout)
        if not held.taken:
            await held.stack.enter_async_context(self.gate.turn(held.flow))
            held.taken = True
        return await _timed(query, seconds or self.timeout)

    async def clusters(self, caller: Caller, asked: str | None = None) -> Clusters:
        """The cluster a read asks, as parsed (Forbidden unless the caller may read it),
        or the clusters a read that names none is read within (``Fleet.scope``; d. 36)."""
        group = caller.resource.group
        if asked is None:
            return await self.fleet.scope(caller.access, caller.identity, group)
        if await self.fleet.may(caller.access, caller.identity, group, asked):
            return asked
        grant = f"get {auth.Resource(group, 'clusters')} '{visible(asked, limit=QUOTED)}'"
        raise Forbidden(f"user {caller.identity.username!r} may not {grant}")

    async def sees(self, caller: Caller, cluster: str | None) -> bool:
        """Whether the caller may read rows of ``cluster``; a row of none (KubeDL's
        writer's) is every cluster's grant's, as lists read it (outside any scope)."""
        group = caller.resource.group
        return await self.fleet.may(caller.access, caller.identity, group, cluster or "")

    async def visible_job(self, caller: Caller, uid: str) -> str:
        """The namespace of the job with that uid, checked before anything else of it is
        read; NotFound, alike, for a job that never was and one the caller may not see
        (its namespace, or its cluster: decision 36)."""
        place = await self.within(lambda: queries.job_place(uid))
        if place is None or not await caller.may("get", place[0]):
            raise NotFound(_no_job(uid))
        if not await self.sees(caller, place[1]):
            raise NotFound(_no_job(uid))
        return place[0]

    async def job(self, caller: Caller, uid: str, read: Callable[[], Awaitable[T | None]]) -> T:
        """What ``read`` finds of the job with that uid, once the caller may see the job
        (``visible_job``); NotFound when it finds nothing (the job went meanwhile)."""
        await self.visible_job(caller, uid)
        found = await self.within(read)
        if found is None:
            raise NotFound(_no_job(uid))
        return found

    async def page(
        self,
        caller: Caller,
        asked: Asked[F],
        listing: Listing[F],
        shape: Shape | None = None,
        what: str = WITHOUT_NAMESPACE,
        instead: str = NAME_ONE,
    ) -> Page:
        """One page of the list ``asked`` (parsed once), each row as ``shape`` makes it
        (None: as the JSON API answers), once the caller may list the namespace it names
        or all (``Caller.require``, saying ``what`` and ``instead``); in its clusters."""
        filters = asked.filters
        await caller.require("list", filters.namespace, what, instead)
        scope: Clusters = None
        if isinstance(filters.cluster, str):
            # A cluster named bounds the list itself, once the caller may read it.
            await self.clusters(caller, filters.cluster)
        else:
            scope = await self.clusters(caller)
        return await self.within(lambda: listing.page(asked, scope, self.kinds, shape))

    async def usage(
        self, request: web.Request, caller: Caller, values: Mapping[str, Any]
    ) -> web.Response:
        """Usage rolled up as parsed into ``values``, once the caller may list the namespace
        named (or all of them): ``{"items": [...]}``, or CSV when the request accepts
        ``text/csv`` (decision 33)."""
        rows = await self.usage_rows(caller, values, "usage over all namespaces")
        # Several Accept headers are one list, as HTTP joins them.
        if not accept.wants_csv(",".join(request.headers.getall("Accept", []))):
            return web.json_response({"items": rows})
        return web.Response(text=usage.asked_csv(rows, values), content_type="text/csv")

    async def usage_rows(
        self, caller: Caller, values: Mapping[str, Any], what: str
    ) -> list[dict[str, Any]]:
        """The usage roll-up's rows as parsed into ``values``, once the caller may list the
        namespace named (or all of them, ``what`` needing it), within the clusters it may
        read (decision 36): the API's answer and the console's CSV alike."""
        await caller.require("list", values.get("namespace"), what)
        scoped = {**values, "cluster": await self.clusters(caller, values.get("cluster"))}
        return await self.rolled_up(lambda: queries.rollup(**scoped))

    async def rolled_up(self, rollup: Callable[[], Awaitable[T]]) -> T:
        """A usage roll-up's result, run within ``usage_timeout`` (``within``); past it
        TooCostly, which says to narrow the window (decision 33)."""
        try:
            return await self.within(rollup, self.usage_timeout)
        except readpool.QueryTimeout:
            raise usage.TooCostly(self.usage_timeout) from None

    def refusal(self, request: web.Request, exc: Exception) -> Refusal:
        """What a request that raised ``exc`` is answered; a bug is logged, in one line."""
        return refusal_of(request, exc, self.timeout, math.ceil(self.gate.limits.wait))


def refusal_of(request: web.Request, exc: Exception, timeout: float, wait: int) -> Refusal:
    """What a request that raised ``exc`` is answered, its query's time limit ``timeout``
    and a turn's wait ``wait`` s said; a bug is logged, in one line."""
    if isinstance(exc, auth.Unauthenticated):
        return Refusal(401, str(exc), {"WWW-Authenticate": "Bearer"})
    if isinstance(exc, Forbidden):
        return Refusal(403, str(exc))
    if isinstance(exc, NotFound):
        return Refusal(404, str(exc))
    if isinstance(exc, DuplicateAuthorization):
        return Refusal(400, str(exc))
    if isinstance(exc, OverBudget):
        return Refusal(429, str(exc), {"Retry-After": str(exc.retry_after)})
    if isinstance(exc, auth.TooManyCallers):
        return Refusal(503, str(exc), RETRY)
    if isinstance(exc, auth.ReviewFailed):
        return Refusal(503, str(exc))
    if isinstance(exc, gate.Busy):
        return Refusal(503, f"{exc}; retry in {wait} s", {"Retry-After": f"{wait}"})
    if isinstance(exc, queries.BadQuery):
        return Refusal(400, str(exc))
    if isinstance(exc, readpool.QueryTimeout | TimeoutError):
        message = f"the query took longer than {timeout:g} s and was stopped; narrow it"
        return Refusal(504, message)
    if isinstance(exc, failures.ERRORS) and failures.is_unavailable(exc):
        logger.warning("The API's database cannot be reached: %s", failures.describe(exc))
        return Refusal(503, "the archive's database cannot be reached; retry later", RETRY)
    return _failed(request, exc)


def _failed(request: web.Request, exc: BaseException) -> Refusal:
    """A bug's or a refused statement's answer: the caller learns that much, the log
    the kind of error (its text may echo the request, so it is not logged)."""
    logger.error("%s %s failed: %s", request.method, shown(request.path_qs), type(exc).__name__)
    return Refusal(500, "the archive could not answer; the error is logged")


async def _timed(query: Callable[[], Awaitable[T]], seconds: float) -> T:
    with readpool.deadline(seconds):
        async with asyncio.timeout(seconds + BACKSTOP):
            return await query()


def _no_job(uid: str) -> str:
    return f"no job with uid '{visible(uid, limit=QUOTED)}'"


def _flow(request: web.Request, identity: auth.Identity, anonymous: bool) -> str:
    """The flow a caller's reads queue in (``gate``): its user name (the front proxy's
    or the token's), or where nobody is authenticated (``--auth none``) the address the
    request came from."""
    if anonymous:
        return ANONYMOUS_FLOW.format(request.remote)
    return f"user {identity.username}"
