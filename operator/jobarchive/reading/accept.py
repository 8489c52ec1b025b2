"""The Accept header as both APIs read it: its media ranges, and which answer it takes."""

# The media ranges that take plain JSON.
JSON_RANGES = ("application/json", "application/*", "*/*")
# How a quality of zero ("not acceptable") is written.
ZERO = ("0", "0.0", "0.00", "0.000")


def parts(accept: str) -> list[tuple[str, dict[str, str]]]:
    """An Accept header's media ranges in the order given, each its type (lower case)
    and its parameters, q among them (names lower case, values unquoted)."""
    found: list[tuple[str, dict[str, str]]] = []
    for part in accept.split(","):
        media, *rest = part.split(";")
        params: dict[str, str] = {}
        for item in rest:
            key, _, value = item.partition("=")
            params[key.strip().lower()] = value.strip().strip('"')
        if media.strip():
            found.append((media.strip().lower(), params))
    return found


def media_ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    """The media ranges in the order given (each its type and its parameters but q),
    those of q=0 left out: what a client will take, first choice first, as Kubernetes
    reads it."""
    return [
        (media, {key: value for key, value in params.items() if key != "q"})
        for media, params in parts(accept)
        if params.get("q", "1") not in ZERO
    ]


def is_json(media: str) -> bool:
    """Whether a media range takes plain JSON."""
    return media in JSON_RANGES


def wants_csv(accept: str) -> bool:
    """Whether an Accept header prefers CSV (``text/csv``) to JSON (``is_json``): the
    higher quality, the one listed first on a tie; JSON when it names neither."""
    best: dict[str, tuple[float, int]] = {}
    for index, (media, params) in enumerate(parts(accept)):
        quality = _quality(params.get("q", "1"))
        kind = "csv" if media == "text/csv" else "json" if is_json(media) else None
        if kind and (kind not in best or quality > best[kind][0]):
            best[kind] = (quality, index)
    csv_q, csv_at = best.get("csv", (0.0, 0))
    json_q, json_at = best.get("json", (0.0, 0))
    return csv_q > 0 and (csv_q > json_q or (csv_q == json_q and csv_at < json_at))


def _quality(value: str) -> float:
    """A q parameter's value; one that is not a number is none (0), as unusable."""
    try:
        quality = float(value)
    except ValueError:
        return 0.0
    return quality if 0 <= quality <= 1 else 0.0
