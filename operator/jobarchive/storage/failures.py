"""What a database error means: for a write, run it again, wait for the database, or
give up on the rows; for a read, whether the database stopped it for running out of
time; and for people, its cause in one line, in the driver's own words.

Tortoise wraps driver errors, in ``args`` or as the cause, so the whole chain is
searched. MySQL's errors are recognised by their codes, named after PyMySQL's
``ER`` (server) and ``CR`` (client) constants; everything else by its class or,
for SQLite, its message. Tortoise's own messages show the connection parameters
instead of the cause (``Can't connect to MySQL server: {'host': ...``): the cause
is the driver's error further down the chain, and beneath that, for a connection
that failed, the socket's error. Neither ever holds the password: MySQL says only
``(using password: YES)``.
"""

import asyncio
import os
import socket
import sqlite3
import ssl

import pymysql
from pymysql.constants import CR, ER
from tortoise.exceptions import BaseORMException, DBConnectionError

# MariaDB's ER_CONNECTION_KILLED: PyMySQL's ER lists MySQL's codes, not MariaDB's own.
MARIADB_CONNECTION_KILLED = 1927

# A statement the server stopped at its time limit: MariaDB's ER_STATEMENT_TIMEOUT
# (max_statement_time) and MySQL's ER_QUERY_TIMEOUT (MAX_EXECUTION_TIME).
STATEMENT_TIMEOUT_ERRORS = frozenset({1969, 3024})

# InnoDB rolls back one of two transactions that lock the same index gaps in opposite
# orders, or one that waited too long for a lock, and Galera one that lost certification
# to a concurrent write set of another node (1213 too, at COMMIT); done again, it succeeds.
RETRYABLE_ERRORS = frozenset({ER.LOCK_WAIT_TIMEOUT, ER.LOCK_DEADLOCK})

# Galera's node outside the primary component ("WSREP has not yet prepared node for
# application use"): another host must be used, and this one waited for (decision 37).
WSREP_NOT_READY = ER.UNKNOWN_COM_ERROR

# A read-only server (a replica, a secondary, a managed primary demoted by a failover)
# refused a write: the primary is another host.
READ_ONLY = ER.OPTION_PREVENTS_STATEMENT

# Galera refused a write set over wsrep_max_ws_rows (or wsrep_max_ws_size): the batch
# must be split, which the writer does to every batch the database refuses.
WRITE_SET_TOO_LARGE = ER.ERROR_DURING_COMMIT

# The server is unreachable, restarting, or dropped the connection: not the rows' fault.
UNAVAILABLE_ERRORS = frozenset(
    {
        ER.CON_COUNT_ERROR,
        ER.SERVER_SHUTDOWN,
        MARIADB_CONNECTION_KILLED,
        WSREP_NOT_READY,
        READ_ONLY,
        CR.CR_CONNECTION_ERROR,
        CR.CR_CONN_HOST_ERROR,
        CR.CR_SERVER_GONE_ERROR,
        CR.CR_SERVER_LOST,
        CR.CR_SERVER_LOST_EXTENDED,
    }
)


def causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps: Tortoise wraps driver errors in args or as causes."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        nested = [arg for arg in current.args if isinstance(arg, BaseException)]
        current = nested[0] if nested else (current.__cause__ or current.__context__)
    return chain


def _code(error: BaseException) -> int | None:
    first = error.args[0] if error.args else None
    return first if isinstance(first, int) and not isinstance(first, bool) else None


def is_retryable(error: BaseException) -> bool:
    """Whether a failed transaction may simply be run again (a deadlock, a lock timeout)."""
    return any(_code(cause) in RETRYABLE_ERRORS for cause in causes(error))


def is_too_large(error: BaseException) -> bool:
    """Whether the database refused a transaction for its size: split, it succeeds."""
    return any(_code(cause) == WRITE_SET_TOO_LARGE for cause in causes(error))


def is_statement_timeout(error: BaseException) -> bool:
    """Whether the server stopped the statement for running past its time limit."""
    return any(_code(cause) in STATEMENT_TIMEOUT_ERRORS for cause in causes(error))


def is_unavailable(error: BaseException) -> bool:
    """Whether the database, not the data, failed: worth waiting for, never skipping rows."""
    for cause in causes(error):
        if _code(cause) in UNAVAILABLE_ERRORS:
            return True
        if isinstance(cause, ConnectionError | TimeoutError | asyncio.IncompleteReadError):
            return True
        if isinstance(cause, DBConnectionError | pymysql.err.InterfaceError):
            return True
        if "database is locked" in str(cause):
            return True
    return False


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
