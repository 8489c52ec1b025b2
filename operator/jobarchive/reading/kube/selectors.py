"""Field selectors as the archive answers them: each field of a resource an index
serves is one of its list's filters (``reading.params``), compared by equality, and so
are the few its list sifts by; any other is refused naming the fields that are
supported, never answered with an empty list.
Pure: the selector's text in, the filters' names and values out (decision 28).
"""

import dataclasses

from jobarchive.core.visible import QUOTED, visible
from jobarchive.reading.kube.discovery import EVENTS, JOBS, PODS
from jobarchive.reading.kube.objects import EVENT_FIELDS, JOB_FIELDS, POD_FIELDS, Field
from jobarchive.reading.params import BadQuery


@dataclasses.dataclass(frozen=True)
class Selector:
    """What a field selector is: the list filter it fills, and whether an index leads
    with it (else it only sifts what the others select, as the list's rules say:
    decision 15)."""

    filter: str
    indexed: bool = True


# Per resource, each field selector and the list filter it is: every field of the
# object an index serves, and the few the lists sift by.
FIELDS = {
    JOBS.plural: {
        "metadata.name": Selector("exact_name"),
        "metadata.namespace": Selector("namespace"),
        "metadata.uid": Selector("uid"),
        "status.phase": Selector("status"),
        "spec.kind": Selector("kind"),
        "spec.owner": Selector("owner"),
        "spec.tenant": Selector("tenant"),
        "spec.queue": Selector("queue"),
        "spec.cluster": Selector("cluster"),
        "spec.region": Selector("region", indexed=False),
        "status.inCluster": Selector("in_cluster", indexed=False),
    },
    PODS.plural: {
        "metadata.name": Selector("exact_name"),
        "metadata.namespace": Selector("namespace"),
        "metadata.uid": Selector("uid"),
        "spec.jobUID": Selector("job_uid"),
        "spec.cluster": Selector("cluster", indexed=False),
        "status.phase": Selector("status", indexed=False),
    },
    EVENTS.plural: {
        "metadata.namespace": Selector("namespace"),
        "involvedObject.uid": Selector("uid"),
        "reason": Selector("reason"),
        "involvedObject.name": Selector("object", indexed=False),
        "involvedObject.kind": Selector("kind", indexed=False),
        "type": Selector("type", indexed=False),
        "cluster": Selector("cluster", indexed=False),
    },
}
# Each resource's fields, as its objects carry them: a field no selector serves is
# told as such, not as an unknown one.
OBJECT_FIELDS: dict[str, tuple[Field, ...]] = {
    JOBS.plural: JOB_FIELDS,
    PODS.plural: POD_FIELDS,
    EVENTS.plural: EVENT_FIELDS,
}


def supported(plural: str) -> str:
    """The field selectors of ``plural`` in words: those an index serves, then those
    that sift."""
    fields = FIELDS[plural]
    indexed = ", ".join(name for name, selector in fields.items() if selector.indexed)
    sifted = ", ".join(name for name, selector in fields.items() if not selector.indexed)
    return f"{indexed}, served by an index; {sifted}, which sift what those select"


def _split(text: str, separator: str) -> list[str]:
    """``text`` cut at each unescaped ``separator`` (a backslash escapes the next
    character, as Kubernetes' field selectors write a comma or an equals sign)."""
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current, escaped = current + "\\" + char, False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append(current)
            current = ""
        else:
            current += char
    if escaped:
        raise BadQuery(
            f"fieldSelector: '{visible(text, limit=QUOTED)}' ends in an unfinished escape"
        )
    parts.append(current)
    return parts


def _unescape(value: str) -> str:
    out, escaped = "", False
    for char in value:
        if escaped or char != "\\":
            out, escaped = out + char, False
        else:
            escaped = True
    return out


def filters(plural: str, selector: str) -> list[tuple[str, str]]:
    """The list filters (name, value) a field selector of ``plural`` asks; BadQuery for
    a field not supported, an operator other than ``=`` or ``==``, or a field twice."""
    known = FIELDS[plural]
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for requirement in _split(selector, ","):
        if not requirement.strip():
            continue
        field, *rest = _split(requirement, "=")
        if field.endswith("!") and not field.endswith("\\!"):
            raise BadQuery(
                f"fieldSelector: '{visible(requirement, limit=QUOTED)}': only = and == are "
                f"supported ({supported(plural)})"
            )
        if len(rest) == 2 and rest[0] == "":
            value = rest[1]
        elif len(rest) == 1:
            value = rest[0]
        else:
            raise BadQuery(
                f"fieldSelector: '{visible(requirement, limit=QUOTED)}' is not FIELD=VALUE"
            )
        field = _unescape(field.strip())
        if field not in known:
            raise BadQuery(f"fieldSelector: {_why_not(plural, field)}")
        if field in seen:
            raise BadQuery(
                f"fieldSelector: '{visible(field, limit=QUOTED)}' given twice; give it once"
            )
        seen.add(field)
        found.append((known[field].filter, _unescape(value)))
    return found


def _why_not(plural: str, field: str) -> str:
    """Why a field is no selector: a field of the object no index serves, or none."""
    fields = {".".join(each.path) for each in OBJECT_FIELDS[plural]}
    said = (
        f"'{visible(field, limit=QUOTED)}': no index serves this field"
        if field in fields
        else (f"'{visible(field, limit=QUOTED)}' is not a field selector")
    )
    return f"{said} of {plural} (supported: {supported(plural)})"
