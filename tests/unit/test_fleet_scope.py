"""The clusters a list that names none is read within (decision 36), with an access
control that answers from a set and counts what it was asked."""

import pytest

from jobarchive.reading import auth, fleet
from jobarchive.reading.params import BadQuery

CALLER = auth.Identity("dave")


class Granted:
    """Grants ``get clusters`` by name (``"*"``: a rule without names), nothing else."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)
        self.asked: list[str] = []

    async def authenticate(self, authorization: str | None) -> auth.Identity:
        return CALLER

    async def allowed(
        self,
        identity: auth.Identity,
        verb: str,
        namespace: str,
        resource: auth.Resource = auth.JOBS,
    ) -> bool:
        assert (verb, namespace, resource.resource) == ("get", "", "clusters")
        self.asked.append(resource.name)
        return "*" in self.names or (resource.name != "" and resource.name in self.names)

    async def close(self) -> None:
        """Nothing to release."""


def archive_of(*names: str, more: bool = False) -> fleet.Known:
    async def known(most: int) -> tuple[list[str], bool]:
        assert most == fleet.MOST
        return list(names), more

    return known


async def test_the_home_cluster_and_those_granted_by_name() -> None:
    access = Granted("west")
    scope = await fleet.Fleet("east", archive_of("east", "north", "west")).scope(
        access, CALLER, "jobarchive.io"
    )
    assert scope == ("east", "west")
    assert sorted(access.asked) == ["", "north", "west"]
    assert fleet.sees(scope, "west") and not fleet.sees(scope, "north")


async def test_one_clusters_archive_costs_no_review_and_a_grant_of_all_no_filter() -> None:
    alone = Granted()
    assert await fleet.Fleet("east", archive_of("east")).scope(alone, CALLER, "g") == ("east",)
    assert alone.asked == []
    every = Granted("*")
    assert await fleet.Fleet("east", archive_of("east", "west")).scope(every, CALLER, "g") is None
    assert every.asked == [""]
    assert await fleet.Fleet("east", archive_of("west")).scope(auth.NoAuth(), CALLER, "g") is None


async def test_past_the_most_clusters_a_list_is_refused_not_cut() -> None:
    crowded = fleet.Fleet("east", archive_of("east", "west", more=True))
    with pytest.raises(BadQuery, match="more than 100 clusters: name a cluster"):
        await crowded.scope(Granted("west"), CALLER, "jobarchive.io")
