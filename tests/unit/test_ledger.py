"""Each identity's reviews within its budget, its answers apart (``reading.ledger``)."""

import pytest

from jobarchive.reading.ledger import Bucket, Ledgers, OverBudget, ReviewBudget

BUDGET = ReviewBudget(burst=3, rate=2)


def test_a_bucket_gives_its_burst_then_its_rate_and_says_when_the_next_comes() -> None:
    bucket = Bucket(tokens=3, stamp=0.0)
    assert [bucket.take(BUDGET, 0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(BUDGET, 0.0) == 0.5  # refused: half a second to the next token
    assert bucket.take(BUDGET, 0.5) == 0.0
    # A quiet while fills it to its burst, never past it.
    bucket.take(BUDGET, 100.0)
    assert bucket.tokens == 2


def test_an_identity_over_its_budget_is_refused_and_others_are_not() -> None:
    ledgers: Ledgers[str, str] = Ledgers(ttl=60, budget=ReviewBudget(burst=2, rate=1))
    ledgers.spend("mallory", "mallory")
    ledgers.spend("mallory", "mallory")
    with pytest.raises(OverBudget) as refused:
        ledgers.spend("mallory", "mallory")
    assert refused.value.retry_after == 1
    ledgers.spend("bob", "bob")


def test_answers_are_kept_per_identity_each_within_its_bound() -> None:
    ledgers: Ledgers[str, str] = Ledgers(ttl=60, identities=2, decisions=2)
    ledgers.learn("bob", "team-a", True)
    for namespace in ("x1", "x2", "x3"):
        ledgers.learn("mallory", namespace, False)
    # Mallory's third answer pushed out her first, never bob's.
    assert [ledgers.answer("mallory", n) for n in ("x1", "x2", "x3")] == [None, False, False]
    assert ledgers.answer("bob", "team-a") is True
    # Past the identities kept, the one that sent a review longest ago is forgotten.
    ledgers.spend("carol", "carol")
    assert ledgers.answer("bob", "team-a") is None
