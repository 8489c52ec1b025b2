"""Why the database failed, in one line for people: the driver's own words.

Tortoise wraps driver errors in its own, whose messages show the connection
parameters instead of the cause (``Can't connect to MySQL server: {'host': ...``);
the cause is the driver's error further down the chain, and beneath that, for a
connection that failed, the socket's error. Neither ever holds the password: MySQL
says only ``(using password: YES)``.
"""

import os
import socket
import sqlite3
import ssl

import pymysql
from tortoise.exceptions import BaseORMException

from jobarchive.storage.errors import causes

# What opening or reading the database raises when the database, not the program, fails.
ERRORS: tuple[type[BaseException], ...] = (
    BaseORMException,
    pymysql.err.MySQLError,
    sqlite3.Error,
    OSError,
)


def describe(error: BaseException) -> str:
    """The cause of a database failure in one line, e.g. ``Unknown database 'x'``."""
    chain = causes(error)
    for index, cause in enumerate(chain):
        if isinstance(cause, pymysql.err.MySQLError) and len(cause.args) == 2:
            message = str(cause.args[1])
            beneath = _socket_error(chain[index + 1 :])
            reason = _os_reason(beneath) if beneath is not None else ""
            return f"{message} ({reason})" if reason and reason not in message else message
        if isinstance(cause, sqlite3.Error):
            return str(cause) or type(cause).__name__
    socket_error = _socket_error(chain)
    if socket_error is not None:
        return _os_reason(socket_error)
    return str(chain[-1]) or type(chain[-1]).__name__


def _socket_error(chain: list[BaseException]) -> OSError | None:
    """The first OSError of a chain that is not Tortoise's (its DBConnectionError is one)."""
    for cause in chain:
        if isinstance(cause, OSError) and not isinstance(cause, BaseORMException):
            return cause
    return None


def _os_reason(error: OSError) -> str:
    """``Connection refused`` rather than asyncio's ``Connect call failed ('h', 1)``."""
    # TLS errors carry OpenSSL's own codes as errno, which strerror would misname.
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS: the server's certificate is not trusted: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or error}"
    if isinstance(error, TimeoutError) and not error.errno:
        return "timed out"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host: {error.strerror}"
    if error.errno and error.errno > 0:
        return os.strerror(error.errno)
    return str(error) or type(error).__name__
