"""Each identity's SubjectAccessReviews: sent within a budget, and their answers kept
apart from everyone else's (ARCHITECTURE.md, decision 14).

A caller whose every request asks about another namespace would cost the API server
a review per request, and, were the answers shared, push everyone else's out. So each
identity has its own ``Ledger``: a token bucket (``ReviewBudget``: ``burst`` reviews at
once after a quiet while, ``rate`` a second on average) that every review actually
sent takes one token from, an answer kept costing nothing; and its own answers, at most
``DECISIONS`` of them. Past its budget a review is not sent: ``OverBudget`` says in how
many seconds the next token comes (429, ``Retry-After``). The ledgers are kept for the
``IDENTITIES`` identities that sent a review most recently; one forgotten starts again
with a full bucket, which only as many identities as that, each with its own valid
credentials, can bring about.
"""

import dataclasses
import logging
import math
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

from jobarchive.config import DEFAULTS
from jobarchive.core.bounded import Expiring, Lru
from jobarchive.infra.logs import shown

logger = logging.getLogger(__name__)

# The identities whose ledgers are kept, and the answers each keeps at most.
IDENTITIES = 1024
DECISIONS = 256
# Seconds between two log lines about reviews refused over a budget.
REFUSED_EVERY = 60.0

Who = TypeVar("Who", bound=Hashable)
Q = TypeVar("Q", bound=Hashable)


@dataclasses.dataclass(frozen=True)
class ReviewBudget:
    """How many SubjectAccessReviews one identity may have sent: ``burst`` at once after
    a quiet while, ``rate`` a second on average."""

    burst: int = DEFAULTS.access_review_burst
    rate: float = DEFAULTS.access_review_rate


class OverBudget(Exception):
    """The caller's reviews are over its budget (429); ``retry_after`` whole seconds
    until its next one may be sent."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(
            f"too many access reviews for this caller; retry in {retry_after} s "
            "(the answers already known are reused: ask about fewer namespaces)"
        )
        self.retry_after = retry_after


@dataclasses.dataclass
class Bucket:
    """A token bucket: ``tokens`` as of ``stamp`` (monotonic seconds)."""

    tokens: float
    stamp: float

    def take(self, budget: ReviewBudget, now: float) -> float:
        """Take a token if there is one: 0; else the seconds until there is, none taken."""
        self.tokens = min(budget.burst, self.tokens + (now - self.stamp) * budget.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / budget.rate


@dataclasses.dataclass
class Ledger(Generic[Q]):
    """One identity's bucket and the answers to its reviews."""

    bucket: Bucket
    answers: Expiring[Q, bool]


class Ledgers(Generic[Who, Q]):
    """The ledgers of the identities that sent a review most recently."""

    def __init__(
        self,
        ttl: float,
        budget: ReviewBudget | None = None,
        identities: int = IDENTITIES,
        decisions: int = DECISIONS,
    ) -> None:
        self.ttl = ttl
        self.budget = budget or ReviewBudget()
        self.decisions = decisions
        self._ledgers: Lru[Who, Ledger[Q]] = Lru(identities)
        self._refused = 0
        self._said = -math.inf

    def answer(self, identity: Who, question: Q) -> bool | None:
        """The identity's answer to ``question`` while it holds; None when unknown."""
        ledger = self._ledgers.get(identity)
        return None if ledger is None else ledger.answers.get(question)

    def spend(self, identity: Who, name: str) -> None:
        """Take a review from the identity's budget (``name``: for the log); OverBudget
        when there is none left."""
        ledger = self._ledger(identity)
        now = time.monotonic()
        wait = ledger.bucket.take(self.budget, now)
        # Written back on every review sent: the identities kept are the busiest lately.
        self._ledgers.put(identity, ledger)
        if wait > 0:
            raise self._over(name, wait, now)

    def learn(self, identity: Who, question: Q, answer: bool) -> None:
        """Keep the identity's answer to ``question`` for ``ttl`` seconds."""
        self._ledger(identity).answers.put(question, answer)

    def _ledger(self, identity: Who) -> Ledger[Q]:
        ledger = self._ledgers.get(identity)
        if ledger is None:
            bucket = Bucket(float(self.budget.burst), time.monotonic())
            ledger = Ledger(bucket, Expiring(self.ttl, self.decisions))
            self._ledgers.put(identity, ledger)
        return ledger

    def _over(self, name: str, wait: float, now: float) -> OverBudget:
        """The refusal; logged at most every REFUSED_EVERY s, with the count since."""
        self._refused += 1
        if now - self._said >= REFUSED_EVERY:
            logger.warning(
                "Access reviews over a caller's budget (%d at once, %g a second): "
                "answering 429; %d refused since this was last logged, the last of user %s",
                self.budget.burst,
                self.budget.rate,
                self._refused,
                shown(name),
            )
            self._said, self._refused = now, 0
        return OverBudget(max(1, math.ceil(wait)))
