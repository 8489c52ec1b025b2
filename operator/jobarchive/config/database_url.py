"""The database URL: where it comes from, whether the operator can use it, and how it
is shown.

JOBARCHIVE_DB_URL, or the file JOBARCHIVE_DB_URL_FILE names, else KubeDL's MYSQL_*
variables, else the embedded default; the read side's likewise, else the same. No
message shows the password or any of it: ``redact_url`` wherever a URL is shown.

A database URL whose user name or password holds a character that ends that part
of a URL (``/``, ``?``, ``#``, ``@``, ``[``, ``]``) is refused, not guessed at: urllib
would read part of the password as the host, path or fragment, and every message
that shows the URL would show that part. The check works on the raw text, before
anything is parsed, so that its message can echo none of it.

A MySQL URL may list several hosts, ``mysql://user:pass@h1:3306,h2:3306/db``: the
pool tries them in order (``storage.failover``, decision 37). ``hosts`` reads the
list and ``first_host_url`` is the URL of its first, which Tortoise can parse.
"""

import logging
import os
import stat
import urllib.parse
from collections.abc import Mapping

from jobarchive.config.database_query import check_query, query_secrets, redact_query
from jobarchive.config.errors import ConfigError

logger = logging.getLogger(__name__)

DEFAULT_DB_URL = "sqlite://jobarchive.sqlite3"
_SCHEMES = ("mysql", "sqlite")


def redact_url(url: str) -> str:
    """Replace the password of a URL with ``***``, in its user information and in its
    query (``?password=``, and any parameter named as a secret). Where urllib reads no
    password but the text holds one (``has_password``: a URL it parses otherwise), all
    before the last ``@`` is masked."""
    parts = urllib.parse.urlsplit(url)
    if _misplaced_userinfo(parts):
        return url.partition("://")[0] + "://***@" + url.rpartition("@")[2]
    parts = parts._replace(query=redact_query(parts.query))
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    before = url.partition("?")[0]
    if has_password(before):
        scheme, separator, _ = before.partition("://")
        shown = scheme + separator + "***@" + before.rpartition("@")[2]
        return shown + ("?" + parts.query if parts.query else "")
    # Nothing in the user information: the URL as written, only its query's secrets masked
    # (urlunsplit would also rewrite what it holds, mysql:///db as mysql:/db).
    query = url.partition("?")[2].partition("#")[0]
    return url if query == parts.query else url.replace("?" + query, "?" + parts.query, 1)


def url_secrets(url: str) -> frozenset[str]:
    """The passwords of a URL (its user information's and its query's), as written and
    as decoded: what no log line may show."""
    parts = urllib.parse.urlsplit(url)
    found = query_secrets(parts.query)
    if parts.password:
        found |= {parts.password, urllib.parse.unquote(parts.password)}
    return found


def _misplaced_userinfo(parts: urllib.parse.SplitResult) -> bool:
    """Whether a user name or password holding an unescaped ``?`` or ``#`` made urllib
    read part of it as the query or the fragment: an ``@`` in a parameter's name or in
    the fragment (a parameter's value may hold one: ``?password=p@ss``)."""
    names = (piece.partition("=")[0] for piece in parts.query.split("&"))
    return "@" not in parts.netloc and ("@" in parts.fragment or any("@" in n for n in names))


def has_password(url: str) -> bool:
    """Whether a URL, valid or not, holds a password: text after a ``:`` before its last
    ``@``, or a secret parameter in its query."""
    userinfo = url.partition("://")[2].rpartition("@")[0]
    return bool(userinfo.partition(":")[2]) or bool(query_secrets(url.partition("?")[2]))


def read_url_file(path: str, source: str) -> str:
    """The URL a file holds (a mounted Secret, say), surrounding whitespace removed;
    ConfigError naming ``source`` when it is missing, unreadable or empty; one warning
    when every user may read or write it (ARCHITECTURE.md, decision 25)."""
    try:
        with open(path, encoding="utf-8") as file:
            mode = stat.S_IMODE(os.fstat(file.fileno()).st_mode)
            text = file.read()
    except FileNotFoundError:
        raise ConfigError(f"{source}: no file at {path}") from None
    except UnicodeDecodeError:
        # The error's text quotes the offending byte, which may be the password's.
        raise ConfigError(f"{source}: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read {path} ({exc.strerror or exc})") from None
    url = text.strip()
    if not url:
        raise ConfigError(f"{source}: {path} is empty")
    # Once per file: a process may load its settings more than once.
    if mode & 0o007 and path not in _EXPOSED:
        _EXPOSED.add(path)
        logger.warning(
            "%s: %s is open to every user of this machine (mode %04o), and the database "
            "password in it too: chmod o-rwx it (a mounted Secret: defaultMode 0440)",
            source,
            path,
            mode,
        )
    return url


_EXPOSED: set[str] = set()


# The variables that name a database; without any, the embedded default is used.
DATABASE_VARIABLES = (
    "JOBARCHIVE_DB_URL",
    "JOBARCHIVE_DB_URL_FILE",
    "JOBARCHIVE_READ_DB_URL",
    "JOBARCHIVE_READ_DB_URL_FILE",
    "MYSQL_HOST",
)


def reads_through_api(env: Mapping[str, str]) -> bool:
    """Whether the CLI's read commands read through the aggregated API: KUBECONFIG is
    set and no variable names a database (decision 30)."""
    return bool(env.get("KUBECONFIG")) and not any(env.get(name) for name in DATABASE_VARIABLES)


def db_url(env: Mapping[str, str]) -> str:
    """JOBARCHIVE_DB_URL or the file JOBARCHIVE_DB_URL_FILE names (never both), else
    KubeDL's MYSQL_* variables, else the embedded default."""
    if env.get("JOBARCHIVE_DB_URL") and env.get("JOBARCHIVE_DB_URL_FILE"):
        raise ConfigError("JOBARCHIVE_DB_URL and JOBARCHIVE_DB_URL_FILE are both set: keep one")
    if env.get("JOBARCHIVE_DB_URL"):
        url = env["JOBARCHIVE_DB_URL"]
        validate_db_url(url, "JOBARCHIVE_DB_URL")
        return url
    if env.get("JOBARCHIVE_DB_URL_FILE"):
        url = read_url_file(env["JOBARCHIVE_DB_URL_FILE"], "JOBARCHIVE_DB_URL_FILE")
        validate_db_url(url, "JOBARCHIVE_DB_URL_FILE")
        return url
    if env.get("MYSQL_HOST"):
        return _url_from_kubedl_variables(env)
    return DEFAULT_DB_URL


def read_db_url(env: Mapping[str, str], written: str) -> str:
    """JOBARCHIVE_READ_DB_URL or the file JOBARCHIVE_READ_DB_URL_FILE names (never both),
    else the database the operator writes to.

    A replica, or the same database under a read-only account: the same kind of
    database as the one written, since it must hold the same tables, and TLS
    (JOBARCHIVE_DB_TLS) applies to both.
    """
    variable, file_variable = "JOBARCHIVE_READ_DB_URL", "JOBARCHIVE_READ_DB_URL_FILE"
    if env.get(variable) and env.get(file_variable):
        raise ConfigError(f"{variable} and {file_variable} are both set: keep one")
    if env.get(variable):
        url, source = env[variable], variable
    elif env.get(file_variable):
        url, source = read_url_file(env[file_variable], file_variable), file_variable
    else:
        return written
    validate_db_url(url, source)
    scheme, expected = url.partition(":")[0].lower(), written.partition(":")[0].lower()
    if scheme != expected:
        raise ConfigError(
            f"{source}: a {scheme} database, while the archive is written to a {expected} one: "
            "reads must see the tables the operator writes"
        )
    return url


Host = tuple[str, int]
MYSQL_PORT = 3306


def _authority(url: str) -> tuple[str, str, str]:
    """What precedes a URL's host list (scheme and user information, with ``@``), the
    host list, and what follows it."""
    scheme, separator, rest = url.partition("://")
    end = min((index for index in map(rest.find, "/?#") if index >= 0), default=len(rest))
    userinfo, at, host_list = rest[:end].rpartition("@")
    return scheme + separator + userinfo + at, host_list, rest[end:]


def hosts(url: str, source: str = "the database URL") -> tuple[Host, ...]:
    """The hosts of a ``mysql://`` URL, in order, each with its port (3306 by default);
    ConfigError naming ``source`` for an empty host or a port that is not one, which
    echoes neither, since a URL without ``@`` holds its password where a port goes."""
    entries = _authority(url)[1].split(",")
    found = []
    for index, entry in enumerate(entries, start=1):
        where = f"host {index} of {len(entries)}" if len(entries) > 1 else "the host"
        if entry.startswith("["):
            name, _, port = entry[1:].partition("]")
            port = port.removeprefix(":") if port.startswith(":") or not port else "?"
        else:
            name, _, port = entry.partition(":")
        if not name:
            raise ConfigError(f"{source}: {where} is empty (list hosts as h1:3306,h2:3306)")
        if port and not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
            raise ConfigError(f"{source}: {where} has a port that is not 1-65535")
        found.append((name, int(port) if port else MYSQL_PORT))
    return tuple(found)


def first_host_url(url: str) -> str:
    """The URL with only the first of its hosts, as Tortoise and urllib read URLs."""
    head, host_list, tail = _authority(url)
    return head + host_list.split(",")[0] + tail


def validate_db_url(url: str, source: str) -> None:
    """Refuse a URL the operator cannot use, with a ConfigError naming ``source`` (the
    variable or option it came from); no message shows the password or any of it."""
    if any(char in url for char in "\t\r\n"):
        # urllib deletes these silently, so the password used would not be the one written.
        raise ConfigError(f"{source} contains a tab or a line break: percent-encode it")
    if url.partition(":")[0].lower() == "mysql":
        _check_userinfo(url, source)
        if "," in _authority(url)[1]:
            hosts(url, source)
    try:
        misplaced = _misplaced_userinfo(urllib.parse.urlsplit(url))
        parts = urllib.parse.urlsplit(first_host_url(url))
        port = parts.port
    except ValueError:
        # urllib's message quotes the port it could not read, which may be the password.
        raise ConfigError(
            f"{source} is not a valid URL (expected mysql://user:password@host:3306/database "
            "or sqlite:///path/file.sqlite3)"
        ) from None
    if misplaced:
        # Its parameters' names would be the password's text: refused, shown nowhere.
        raise ConfigError(
            f"{source}: an '@' after a '?' or '#': percent-encode '?', '#' and '@' in the "
            "user name and password (%3F, %23, %40)"
        )
    if parts.scheme not in _SCHEMES:
        raise ConfigError(
            f"{source}: scheme {parts.scheme!r} is not supported "
            f"(use one of: {', '.join(_SCHEMES)})"
        )
    if parts.scheme == "sqlite" and not (parts.netloc + parts.path):
        raise ConfigError(f"{source}: a sqlite URL needs a file path")
    if parts.scheme == "sqlite" and "@" in parts.netloc:
        # A file has no user: Tortoise would rewrite the text before the '@' and fail.
        raise ConfigError(f"{source}: a sqlite URL takes no user name or password")
    if parts.scheme == "mysql":
        if not parts.hostname:
            raise ConfigError(f"{source}: no host in {redact_url(url)}")
        if not parts.path.strip("/"):
            raise ConfigError(f"{source}: no database name in {redact_url(url)}")
        if port == 0:
            raise ConfigError(f"{source}: port 0 in {redact_url(url)}")
        for name, _ in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            if name.lower().startswith(("ssl", "tls")):
                raise ConfigError(
                    f"{source}: the parameter {name!r} does not turn TLS on here; "
                    "set JOBARCHIVE_DB_TLS (and JOBARCHIVE_DB_TLS_CA) instead"
                )
    check_query(parts.scheme, parts.query, source)


def _check_userinfo(url: str, source: str) -> None:
    """Refuse a user name or password holding a character that ends it early.

    The authority of a URL ends at the first ``/``, ``?`` or ``#``, and the user
    information at its last ``@``: an ``@`` after the authority, or two in it, or a
    bracket before it, means the user or password holds one of those unencoded.
    """
    rest = url.partition("://")[2]
    end = min((index for index in map(rest.find, "/?#") if index >= 0), default=len(rest))
    userinfo, tail = rest[:end].rpartition("@")[0], rest[end:]
    if "@" in tail or any(char in userinfo for char in "@[]"):
        raise ConfigError(
            f"{source}: the user name or password holds an unencoded '/', '?', '#', '@', "
            "'[' or ']', so the URL does not say what was meant: percent-encode them "
            "('/' %2F, '?' %3F, '#' %23, '@' %40, '[' %5B, ']' %5D), or give the password "
            "in MYSQL_PASSWORD (taken verbatim) with MYSQL_HOST and the other MYSQL_* variables"
        )


def _url_from_kubedl_variables(env: Mapping[str, str]) -> str:
    port = env.get("MYSQL_PORT", "3306")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"MYSQL_PORT: {port!r} is not a TCP port number")
    user = urllib.parse.quote(env.get("MYSQL_USER", "root"), safe="")
    password = urllib.parse.quote(env.get("MYSQL_PASSWORD", ""), safe="")
    database = env.get("MYSQL_DB_NAME", "kubedl")
    if not database:
        raise ConfigError("MYSQL_DB_NAME is empty")
    host = env["MYSQL_HOST"]
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"mysql://{user}:{password}@{host}:{port}/{urllib.parse.quote(database, safe='')}"
