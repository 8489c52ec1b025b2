"""The one parser of a request's query parameters, by a table of ``reading.params``:
the JSON API, the aggregated API and the console parse with it, so each refuses the
same input with the same words. A list's request is parsed once into its record
(``listed``), whose namespace and cluster are checked as it is made; any other
request's are checked as they are parsed (``parse``): before any review of them."""

from typing import Any

from multidict import MultiMapping

from jobarchive.core.visible import QUOTED, visible
from jobarchive.reading import queries
from jobarchive.reading.lists import Asked, F, Listing
from jobarchive.reading.params import PAGE, check_cluster, check_namespace
from jobarchive.reading.queries import Param

# Longer than any value a filter can match (the widest column is 512 characters) or
# than any cursor this archive gives out: refused before anything reads it.
LONGEST_VALUE = 1024


def parse(query: "MultiMapping[str]", params: tuple[Param, ...]) -> dict[str, Any]:
    """Typed values of the known parameters, keyed by their field (``typed``), the
    namespace and the cluster among them checked: none so named can be granted or stored."""
    values = typed(query, params)
    check_namespace(values.get("namespace"))
    if "cluster" in values:
        check_cluster(values["cluster"])
    return values


def listed(query: "MultiMapping[str]", listing: Listing[F]) -> Asked[F]:
    """A list's request parsed once by its table and the page's (``PAGE``)."""
    values = typed(query, listing.params + PAGE)
    limit, cursor = values.pop("limit", None), values.pop("cursor", None)
    return listing.asked(values, limit, cursor)


def typed(query: "MultiMapping[str]", params: tuple[Param, ...]) -> dict[str, Any]:
    """Typed values of the known parameters, keyed by their field; BadQuery otherwise:
    an unknown or repeated parameter, or a value too long, is refused, not guessed at."""
    known = {param.name: param for param in params}
    unknown = sorted(set(query) - set(known))
    if unknown:
        names = ", ".join(known) or "none"
        raise queries.BadQuery(
            f"unknown parameter '{visible(unknown[0], limit=QUOTED)}' (known: {names})"
        )
    values: dict[str, Any] = {}
    for name in query:
        param = known[name]
        raw = query.getall(name)
        if len(raw) > 1:
            raise queries.BadQuery(f"{name}: given {len(raw)} times; give it once")
        if len(raw[0]) > LONGEST_VALUE:
            raise queries.BadQuery(f"{name}: {len(raw[0])} characters, over {LONGEST_VALUE}")
        values[param.key] = _typed(param, raw[0])
    return values


def _typed(param: Param, raw: str) -> Any:
    if param.type == "time":
        return queries.parse_time(raw, param.name)
    if param.type == "boolean":
        if raw.lower() not in ("true", "false"):
            raise queries.BadQuery(
                f"{param.name}: '{visible(raw, limit=QUOTED)}' is not true or false"
            )
        return raw.lower() == "true"
    if param.type == "integer":
        # ASCII digits only: int() would also take full-width digits, "5_0" and " 5 ".
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
            raise queries.BadQuery(f"{param.name}: '{visible(raw, limit=QUOTED)}' is not a number")
        return int(raw)
    return raw
