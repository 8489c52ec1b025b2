"""The type of the ``start_operator`` fixture, for the tests that start operators themselves."""

from typing import Protocol

from testbed.operator import OperatorProcess


class OperatorFactory(Protocol):
    """Starts one more real operator process against the test's cluster and database."""

    async def __call__(self, *args: str, **env: str | None) -> OperatorProcess:
        """Start ``kopf run`` with extra command-line ``args``; each ``env`` variable
        overrides the test's environment, None removing it."""
        ...
