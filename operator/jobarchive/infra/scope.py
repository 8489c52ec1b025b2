"""Which namespaces this operator serves: exactly those Kopf was told to serve.

Kopf scopes its watches with ``kopf run --namespace`` (repeatable; globs, negations)
or ``--all-namespaces``, and tells its handlers nothing of it. What the operator lists
itself (the reconciliation, the peering objects it reads and creates) must stay inside
the same namespaces, or a shard would mark another shard's rows gone. Two sources
could disagree (an environment variable beside the flags, say), so there is only one:
``operator/main.py`` runs inside the ``kopf run`` command while Kopf loads it, and
``from_command_line`` reads the values Kopf's own command line parsed, through
click's public ``get_current_context`` (Kopf's CLI is a click command).

Patterns are matched as Kopf documents them (``match``): comma-separated globs, the
first inclusive one decisive, ``!`` excluding, a leading exclusion implying ``*``.
"""

import dataclasses
import fnmatch
import logging
import os
from collections.abc import Mapping

import click
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.infra.cluster import listed

logger = logging.getLogger(__name__)
# Kopf's own legacy variable for one namespace, added to the flags by ``kopf run``.
LEGACY_VARIABLE = "KOPF_RUN_NAMESPACE"
# The characters that make a pattern more than one namespace's name (Kopf's rule).
PATTERN_CHARACTERS = frozenset(",*?!")


def match(namespace: str, pattern: str) -> bool:
    """Whether a namespace matches one ``--namespace`` pattern, by Kopf's documented rule:
    the first glob decides whether it matches at all, a ``!glob`` excludes what it
    matches, and a later inclusive glob takes back only what the first one matched."""
    globs = [glob.strip() for glob in pattern.split(",")]
    if globs[0].startswith("!"):
        globs.insert(0, "*")
    matches = first = fnmatch.fnmatchcase(namespace, globs[0])
    for glob in globs[1:]:
        if glob.startswith("!"):
            matches = matches and not fnmatch.fnmatchcase(namespace, glob[1:])
        else:
            matches = matches or (first and fnmatch.fnmatchcase(namespace, glob))
    return matches


def is_exact(pattern: str) -> bool:
    """Whether a pattern names one namespace and nothing else."""
    return not PATTERN_CHARACTERS & set(pattern)


@dataclasses.dataclass(frozen=True)
class Scope:
    """The namespaces served (none given: the whole cluster) and Kopf's peering options:
    ``peering`` the name given with ``--peering`` (the object must then exist), None
    when Kopf detects it; ``standalone`` with ``--standalone``."""

    patterns: tuple[str, ...] = ()
    peering: str | None = None
    standalone: bool = False

    @property
    def clusterwide(self) -> bool:
        """Whether every namespace is served (``--all-namespaces``)."""
        return not self.patterns

    @property
    def exact(self) -> bool:
        """Whether every pattern names one namespace: nothing to discover at run time."""
        return all(map(is_exact, self.patterns))

    def matches(self, namespace: str) -> bool:
        """Whether a namespace is served."""
        return self.clusterwide or any(match(namespace, pattern) for pattern in self.patterns)

    def describe(self) -> str:
        """The scope for a log line."""
        return "all namespaces" if self.clusterwide else "namespaces " + " ".join(self.patterns)

    async def namespaces(self, api: client.ApiClient, existing: bool = False) -> list[str] | None:
        """The namespaces served now; None for the whole cluster.

        Exact names are served whether they exist or not (a list in a namespace that
        does not exist is empty, as after its deletion), unless ``existing`` asks for
        those that exist, as Kopf serves them (its peering, say). Patterns are matched
        against the namespaces listed. If namespaces may not be listed, the exact names
        are served, as Kopf then does too.
        """
        if self.clusterwide:
            return None
        names = {pattern for pattern in self.patterns if is_exact(pattern)}
        if self.exact and not existing:
            return sorted(names)
        try:
            found = await list_names(api, "/api/v1/namespaces")
        except ApiException as exc:
            if exc.status not in (401, 403):
                raise
            # Asked for often (the peering, every few seconds): said once per run elsewhere.
            logger.log(
                logging.DEBUG if existing else logging.WARNING,
                "Cannot list namespaces (%s %s): serving only those named exactly: %s",
                exc.status,
                exc.reason,
                " ".join(sorted(names)) or "none",
            )
            return sorted(names)
        return sorted(name for name in found if self.matches(name))


# Every namespace: ``--all-namespaces``, and Kopf's default.
CLUSTER = Scope()


async def list_names(api: client.ApiClient, path: str) -> list[str]:
    """The names of every object at a list path, page by page."""
    return [name async for meta in listed(api, path) if isinstance(name := meta.get("name"), str)]


def from_command_line(environ: Mapping[str, str] = os.environ) -> Scope:
    """The scope of the ``kopf run`` command this process runs in, as Kopf parsed it.

    Outside ``kopf run`` (the CLI, tests importing the package) the scope is the whole
    cluster, which is also Kopf's default.
    """
    context = click.get_current_context(silent=True)
    if context is None or context.command.name != "run" or "namespaces" not in context.params:
        return CLUSTER
    params = context.params
    patterns = tuple(str(pattern) for pattern in params.get("namespaces") or ())
    if environ.get(LEGACY_VARIABLE):
        patterns += (environ[LEGACY_VARIABLE],)
    return Scope(patterns, params.get("peering_name") or None, bool(params.get("standalone")))
