"""Who may read what through the HTTP API, asked of Kubernetes itself.

With ``kubernetes`` (the default) a caller presents a bearer token. The API server
says whose it is (a TokenReview), then whether that user, with its groups, may
``get`` or ``list`` the virtual resource ``jobs`` of the group ``jobarchive.io`` in a
namespace, or in all of them (a SubjectAccessReview). Access to the archive is thus
granted with ordinary RBAC (the ``jobarchive-reader`` ClusterRole bound in a
namespace, or cluster-wide), and nothing here keeps a list of users or of what they
may see. The reviews are made with the process's own credentials: the operator's
ServiceAccount, or the kubeconfig of whoever runs ``jobarchive serve``. Through the
aggregation layer the caller is named by the front proxy instead (``frontproxy``), and
reviewed alike.

Answers are kept for a short while (``TTL``), so a page of requests costs one pair of
reviews, and a revoked token or binding is honoured within that time; a refused token
is remembered apart and for less (``REFUSED_TTL``). Access decisions are kept per
identity, and each identity's SubjectAccessReviews are sent within its budget
(``ledger``): past it, OverBudget (429). A token is never kept nor logged:
the caches know it by its SHA-256. When the API server cannot answer, neither can the
API (503): nobody is let in for want of an answer. Tokens never accepted before are
reviewed in turns (``Turns``): a flood of made-up tokens costs the API server a few
reviews a second, not one per request (ARCHITECTURE.md, decision 14).

With ``none`` everyone who reaches the port may read everything: for a laptop.
"""

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
import math
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.core.bounded import Expiring, Lru
from jobarchive.infra import cluster
from jobarchive.reading.ledger import Ledgers, ReviewBudget

logger = logging.getLogger(__name__)

GROUP = "jobarchive.io"
RESOURCE = "jobs"


@dataclasses.dataclass(frozen=True)
class Resource:
    """What a SubjectAccessReview asks about: a resource of an API group, and maybe one
    of its subresources or its one object of a name, as RBAC rules name them."""

    group: str
    resource: str
    subresource: str = ""
    name: str = ""

    def attributes(self) -> dict[str, str]:
        """Its review's resource attributes; a subresource and a name only when given."""
        given = {"subresource": self.subresource, "name": self.name}
        return {"group": self.group, "resource": self.resource} | {
            k: v for k, v in given.items() if v
        }

    def __str__(self) -> str:
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.resource}{sub}.{self.group}"


# The JSON API's and the console's virtual resource (decision 14).
JOBS = Resource(GROUP, RESOURCE)
# A SubjectAccessReview's namespace for "in every namespace".
ALL_NAMESPACES = ""
# (apiVersion, kind, plural) of the two reviews.
TOKEN_REVIEW = ("authentication.k8s.io/v1", "TokenReview", "tokenreviews")
ACCESS_REVIEW = ("authorization.k8s.io/v1", "SubjectAccessReview", "subjectaccessreviews")
TTL = 30.0
# A refusal may be an authenticator's passing failure: a valid token so refused is
# locked out no longer than this.
REFUSED_TTL = 10.0
CAPACITY = 4096
REVIEW_TIMEOUT = 5.0
# Reviews of tokens never accepted before: at most REVIEW_RATE a second on average,
# REVIEW_BURST at once after a quiet while, REVIEWS_AT_ONCE in flight; a request
# whose turn is not due within REVIEW_WAIT seconds is answered 503 at once.
REVIEW_RATE = 10.0
REVIEW_BURST = 20
REVIEWS_AT_ONCE = 4
REVIEW_WAIT = 1.0
# Seconds between two log lines about turned-away callers.
TURNED_AWAY_EVERY = 60.0
NOT_ACCEPTED = "the bearer token was not accepted by the Kubernetes API"


@dataclasses.dataclass(frozen=True)
class Identity:
    """Whose a token is, as the TokenReview said; hashable, to key access decisions."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


# What a refused token is reviewed as: no user is ever called "".
NOBODY = Identity("")
ANONYMOUS = Identity("anonymous")


class Unauthenticated(Exception):
    """No bearer token, or one the API server does not accept (401)."""


class ReviewFailed(Exception):
    """The API server did not answer a review (503); the message says why."""


class TooManyCallers(ReviewFailed):
    """A token never accepted before came when its review's turn was not due soon (503)."""


class NoCluster(Exception):
    """``kubernetes`` was asked for where no cluster is configured."""


class Access(Protocol):
    """How the API learns who calls it and what they may read."""

    async def authenticate(self, authorization: str | None) -> Identity:
        """The caller of a request with this Authorization header; Unauthenticated if none."""
        ...

    async def allowed(
        self, identity: Identity, verb: str, namespace: str, resource: Resource = JOBS
    ) -> bool:
        """Whether ``identity`` may ``verb`` the ``resource`` in ``namespace``
        (ALL_NAMESPACES: in all of them)."""
        ...

    async def close(self) -> None:
        """Release what the access control holds (its client)."""
        ...


class Turns:
    """Turns of at most ``rate`` a second (``burst`` at once after a quiet while),
    ``at_once`` running together; a turn not due within ``wait`` s is TooManyCallers.

    Each turn is reserved on arrival, in order (the generic cell rate algorithm:
    ``_due`` is when the next turn is due at the average rate), so that the wait is
    known at once: a caller whose turn is too far off is answered now, not after
    waiting in vain.
    """

    def __init__(self, rate: float, burst: int, at_once: int, wait: float) -> None:
        self.rate = rate
        self.at_once = at_once
        self.wait = wait
        self._interval = 1 / rate
        self._ahead = (max(1, burst) - 1) * self._interval
        self._due = -math.inf
        self._running = asyncio.Semaphore(at_once)
        self._turned_away = 0
        self._said = -math.inf

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Run the block in a turn; TooManyCallers when none comes within the wait."""
        now = time.monotonic()
        start = max(now, self._due - self._ahead)
        if start - now > self.wait:
            raise self._away(now)
        self._due = max(self._due, now) + self._interval
        await asyncio.sleep(start - now)
        try:
            async with asyncio.timeout(max(0.0, now + self.wait - time.monotonic())):
                await self._running.acquire()
        except TimeoutError:
            raise self._away(time.monotonic()) from None
        try:
            yield
        finally:
            self._running.release()

    def _away(self, now: float) -> TooManyCallers:
        """The refusal; logged at most every TURNED_AWAY_EVERY s, with the count since."""
        self._turned_away += 1
        if now - self._said >= TURNED_AWAY_EVERY:
            logger.warning(
                "More callers with tokens not seen before than their reviews' limit "
                "(%g a second, %d at once): answering 503; %d turned away since this was "
                "last logged",
                self.rate,
                self.at_once,
                self._turned_away,
            )
            self._said, self._turned_away = now, 0
        retry = math.ceil(self.wait)
        return TooManyCallers(f"too many new callers to check at once; retry in {retry} s")


class KubernetesAuth:
    """Callers authenticated by TokenReview, authorized by SubjectAccessReview."""

    def __init__(
        self,
        api: client.ApiClient,
        ttl: float = TTL,
        capacity: int = CAPACITY,
        timeout: float = REVIEW_TIMEOUT,
        turns: Turns | None = None,
        refused_ttl: float = REFUSED_TTL,
        budget: ReviewBudget | None = None,
    ) -> None:
        self.api = api
        self.timeout = timeout
        self.turns = turns or Turns(REVIEW_RATE, REVIEW_BURST, REVIEWS_AT_ONCE, REVIEW_WAIT)
        self._identities: Expiring[str, Identity] = Expiring(ttl, capacity)
        # Apart from the identities, so that made-up tokens never push a user out.
        self._refused: Expiring[str, bool] = Expiring(refused_ttl, capacity)
        # Tokens accepted before: their reviews take no turn, so a flood of made-up
        # tokens never holds up a caller the cache knew.
        self._accepted: Lru[str, bool] = Lru(capacity)
        # Each identity's answers apart, its reviews within its budget (``ledger``).
        self._decisions: Ledgers[Identity, tuple[str, str, Resource]] = Ledgers(ttl, budget)
        self._failing = False

    async def authenticate(self, authorization: str | None) -> Identity:
        """The token's user as the API server reviews it; Unauthenticated when refused,
        TooManyCallers when a token never accepted before finds no turn."""
        token = bearer_token(authorization)
        key = hashlib.sha256(token.encode()).hexdigest()
        identity = self._identities.get(key)
        if identity is not None:
            return identity
        if self._refused.get(key):
            raise Unauthenticated(NOT_ACCEPTED)
        turn = contextlib.nullcontext() if self._accepted.get(key) else self.turns.turn()
        async with turn:
            status = await self._review(TOKEN_REVIEW, {"token": token})
        identity = reviewed_identity(status)
        if identity is NOBODY:
            self._refused.put(key, True)
            self._accepted.pop(key)
            raise Unauthenticated(NOT_ACCEPTED)
        self._identities.put(key, identity)
        self._accepted.put(key, True)
        return identity

    async def allowed(
        self, identity: Identity, verb: str, namespace: str, resource: Resource = JOBS
    ) -> bool:
        """Whether the API server's authorizers let ``identity`` ``verb`` the resource there;
        OverBudget when not known and the identity's reviews are over its budget."""
        question = (verb, namespace, resource)
        decision = self._decisions.answer(identity, question)
        if decision is None:
            self._decisions.spend(identity, identity.username)
            spec: dict[str, Any] = {
                "user": identity.username,
                "groups": list(identity.groups),
                "resourceAttributes": {
                    **resource.attributes(),
                    "verb": verb,
                    "namespace": namespace,
                },
            }
            if identity.uid:
                spec["uid"] = identity.uid
            if identity.extra:
                spec["extra"] = {name: list(values) for name, values in identity.extra}
            status = await self._review(ACCESS_REVIEW, spec)
            decision = status.get("allowed") is True and status.get("denied") is not True
            self._decisions.learn(identity, question, decision)
        return decision

    async def close(self) -> None:
        """Close the client of the Kubernetes API."""
        await self.api.close()

    async def _review(
        self, review: tuple[str, str, str], spec: dict[str, Any]
    ) -> Mapping[str, Any]:
        """POST a review; its status. Raises ReviewFailed, logged once per outage."""
        api_version, kind, plural = review
        body = {"apiVersion": api_version, "kind": kind, "spec": spec}
        path = f"/apis/{api_version}/{plural}"
        try:
            answer = await cluster.post_json(self.api, path, body, _request_timeout=self.timeout)
        except ApiException as exc:
            reason = f"the Kubernetes API answered {exc.status} {exc.reason}"
            raise self._failed(kind, reason) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = f"the Kubernetes API did not answer ({_reason(exc)})"
            raise self._failed(kind, reason) from None
        if self._failing:
            self._failing = False
            logger.info("Access reviews are answered again")
        status = answer.get("status")
        return status if isinstance(status, dict) else {}

    def _failed(self, kind: str, reason: str) -> ReviewFailed:
        if not self._failing:
            self._failing = True
            logger.warning("Cannot review API callers (a %s): %s", kind, reason)
        return ReviewFailed(f"cannot check the caller's access: {reason}")


class NoAuth:
    """Everyone may read everything (``--auth none``, ``JOBARCHIVE_API_AUTH=none``)."""

    async def authenticate(self, authorization: str | None) -> Identity:
        """Everyone is the same anonymous caller."""
        return ANONYMOUS

    async def allowed(
        self, identity: Identity, verb: str, namespace: str, resource: Resource = JOBS
    ) -> bool:
        """Always."""
        return True

    async def close(self) -> None:
        """Nothing to release."""


async def access(mode: str, budget: ReviewBudget | None = None) -> Access:
    """The access control of a mode of ``config.API_AUTH_MODES``.

    For ``kubernetes``, a client of the cluster the process runs in, else of the
    current kubeconfig, each caller's reviews within ``budget``; NoCluster, saying why,
    when there is neither.
    """
    if mode == "none":
        return NoAuth()
    try:
        return KubernetesAuth(await cluster.api_client(), budget=budget)
    except cluster.Unavailable as exc:
        raise NoCluster(str(exc)) from None


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; Unauthenticated if none."""
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("a bearer token is required (Authorization: Bearer <token>)")
    return token.strip()


def reviewed_identity(status: Mapping[str, Any]) -> Identity:
    """The user a TokenReview's status names; NOBODY unless it says authenticated."""
    user = status.get("user")
    if status.get("authenticated") is not True or not isinstance(user, dict):
        return NOBODY
    username = user.get("username")
    if not isinstance(username, str) or not username:
        return NOBODY
    extra = user.get("extra")
    if not isinstance(extra, dict):
        extra = {}
    return Identity(
        username=username,
        uid=str(user.get("uid") or ""),
        groups=tuple(str(group) for group in user.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(map(str, v or ()))) for k, v in extra.items())),
    )


def _reason(error: Exception) -> str:
    if isinstance(error, TimeoutError):
        return "no answer in time"
    return str(error) or type(error).__name__
