"""Field selectors as the archive answers them: each supported field of a resource is
one of its list's filters (``reading.params``), compared by equality; anything else
is refused with the fields that are supported, never answered with an empty list.
Pure: the selector's text in, the filters' names and values out (decision 28).
"""

from jobarchive.reading.kube.discovery import EVENTS, JOBS, PODS
from jobarchive.reading.params import BadQuery, quoted

# Per resource, each field selector and the list filter it is.
FIELDS = {
    JOBS.plural: {
        "metadata.name": "exact_name",
        "metadata.uid": "uid",
        "status.phase": "status",
        "spec.kind": "kind",
        "spec.owner": "owner",
        "spec.tenant": "tenant",
        "spec.region": "region",
        "spec.cluster": "cluster",
        "status.inCluster": "in_cluster",
    },
    PODS.plural: {
        "metadata.name": "exact_name",
        "metadata.uid": "uid",
        "spec.jobUID": "job_uid",
        "spec.cluster": "cluster",
        "status.phase": "status",
    },
    EVENTS.plural: {
        "involvedObject.uid": "uid",
        "involvedObject.name": "object",
        "involvedObject.kind": "kind",
        "reason": "reason",
        "type": "type",
        "cluster": "cluster",
    },
}


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
        raise BadQuery(f"fieldSelector: {quoted(text)} ends in an unfinished escape")
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
    supported = ", ".join(known)
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for requirement in _split(selector, ","):
        if not requirement.strip():
            continue
        field, *rest = _split(requirement, "=")
        if field.endswith("!") and not field.endswith("\\!"):
            raise BadQuery(
                f"fieldSelector: {quoted(requirement)}: only = and == are supported "
                f"(fields of {plural}: {supported})"
            )
        if len(rest) == 2 and rest[0] == "":
            value = rest[1]
        elif len(rest) == 1:
            value = rest[0]
        else:
            raise BadQuery(f"fieldSelector: {quoted(requirement)} is not FIELD=VALUE")
        field = _unescape(field.strip())
        if field not in known:
            raise BadQuery(
                f"fieldSelector: {quoted(field)} is not a field selector of {plural} "
                f"(supported: {supported})"
            )
        if field in seen:
            raise BadQuery(f"fieldSelector: {quoted(field)} given twice; give it once")
        seen.add(field)
        found.append((known[field], _unescape(value)))
    return found
