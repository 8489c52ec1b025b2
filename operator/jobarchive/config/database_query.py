"""The query of a database URL: which parameters it may carry, which of them are
secrets, and how they are masked.

Tortoise hands every parameter of a URL's query to the driver: an unknown one fails
deep in aiomysql with a traceback (``connect() got an unexpected keyword argument``),
a number that is none fails in Tortoise's cast, and a SQLite parameter becomes a
``PRAGMA`` statement as written. So the query is checked against a short list, each
parameter with its rule, before anything opens; a refusal names the parameter and
never echoes its value. A password may be given as ``?password=`` (Tortoise takes it
in place of the user information's): it is a secret like the URL's own, masked in
every message and log line. Any parameter whose name says it holds a secret
(``pass``, ``pwd``, ``secret``, ``token``) is masked, known or not, so that even a
refused one is never shown.
"""

import re
import urllib.parse
from collections.abc import Callable

from jobarchive.config.errors import ConfigError

MASK = "***"
# Names that hold a secret: masked wherever a URL is shown, whatever else they are.
_SECRET_NAME = re.compile(r"pass|pwd|secret|token", re.IGNORECASE)

Rule = Callable[[str], str | None]


def _count(least: int) -> Rule:
    def rule(value: str) -> str | None:
        if value.isascii() and value.isdigit() and len(value) <= 6 and int(value) >= least:
            return None
        return f"is not a whole number of at least {least}"

    return rule


def _seconds(value: str) -> str | None:
    try:
        seconds = float(value)
    except ValueError:
        return "is not a number of seconds"
    return None if 0 < seconds <= 3600 else "is not between 0 and 3600 seconds"


def _one_of(*allowed: str) -> Rule:
    def rule(value: str) -> str | None:
        taken = value.lower() in (choice.lower() for choice in allowed)
        return None if taken else f"is not one of {', '.join(allowed)}"

    return rule


def _any(value: str) -> str | None:
    """Any value: the password's."""
    return None


# What each engine's URL may carry, with its rule. MySQL: the pool's bounds and the
# connect timeout Tortoise casts, the password, and utf8mb4 (the tables' character
# set; any other would garble what they hold). SQLite: the PRAGMAs Tortoise sets.
PARAMETERS: dict[str, dict[str, Rule]] = {
    "mysql": {
        "minsize": _count(0),
        "maxsize": _count(1),
        "pool_recycle": _count(0),
        "connect_timeout": _seconds,
        "charset": _one_of("utf8mb4"),
        "password": _any,
    },
    "sqlite": {
        "journal_mode": _one_of("WAL", "DELETE", "TRUNCATE", "PERSIST", "MEMORY"),
        "journal_size_limit": _count(0),
        "foreign_keys": _one_of("ON", "OFF"),
    },
}


def _pairs(query: str) -> list[tuple[str, str]]:
    return urllib.parse.parse_qsl(query, keep_blank_values=True)


def check_query(scheme: str, query: str, source: str) -> None:
    """Refuse a parameter the engine's list does not hold, one given twice, or a value
    its rule refuses: ConfigError naming ``source`` and the parameter, not its value."""
    known = PARAMETERS.get(scheme, {})
    seen: set[str] = set()
    for name, value in _pairs(query):
        if name not in known:
            listed = ", ".join(known) or "none"
            raise ConfigError(f"{source}: {name!r} is not a parameter taken here (known: {listed})")
        if name in seen:
            raise ConfigError(f"{source}: {name!r} is given twice")
        seen.add(name)
        wrong = known[name](value)
        if wrong:
            raise ConfigError(f"{source}: the value of {name!r} {wrong}")
    if scheme == "mysql":
        _check_pool(dict(_pairs(query)), source)


def _check_pool(given: dict[str, str], source: str) -> None:
    if "minsize" in given and "maxsize" in given and int(given["minsize"]) > int(given["maxsize"]):
        raise ConfigError(f"{source}: minsize is larger than maxsize")


def redact_query(query: str) -> str:
    """The query with the value of every secret parameter replaced by ``***``, the
    rest as written."""
    pieces = []
    for piece in query.split("&"):
        name, equals, _ = piece.partition("=")
        secret = equals and _SECRET_NAME.search(urllib.parse.unquote_plus(name))
        pieces.append(f"{name}={MASK}" if secret else piece)
    return "&".join(pieces)


def query_secrets(query: str) -> frozenset[str]:
    """The values of the query's secret parameters, as written and as decoded."""
    found: set[str] = set()
    for piece in query.split("&"):
        name, _, value = piece.partition("=")
        if value and _SECRET_NAME.search(urllib.parse.unquote_plus(name)):
            found |= {value, urllib.parse.unquote_plus(value), urllib.parse.unquote(value)}
    return frozenset(found)
