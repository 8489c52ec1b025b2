"""A MariaDB server of the test bed's own: its data directory under a temporary folder,
a free port on loopback, its own socket and pid file, started and stopped by us.

Tests and benchmarks must never touch a server they did not start: a developer's
machine may run its real database on 3306. So the server here reads no option file
(``--no-defaults``: the distribution's my.cnf names the system's socket and data
directory), listens on 127.0.0.1 only, and is stopped by signalling the one process
it started, never by ``mysqladmin shutdown`` against a host and port that could be
someone else's. Its root account authenticates by password (empty) over TCP,
whatever the system service's root uses (Debian's is unix_socket only).

pytest-mysql was evaluated and not used: its executor initialises the data directory
with the distribution's default root authentication (unix_socket on MariaDB, so no
password login over TCP, which Tortoise and the operator need), starts the server
through ``mysqld_safe`` (a supervisor that restarts a server the outage test wants
stopped), and is a pytest fixture, while ``make bench`` needs the same server
outside pytest.
"""

import contextlib
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import pymysql

from testbed.ports import free_port

# Debian puts the server in /usr/sbin, which a non-root PATH often lacks.
_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
STARTUP_SECONDS = 60.0
# Names the data directory of every private server, so a run can tell them apart.
PRIVATE_PREFIX = "jobarchive-mariadb-"


class MariaDBUnavailable(RuntimeError):
    """No MariaDB server binaries, or the server did not come up; the message says why."""


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name, path=_SEARCH_PATH)
        if found:
            return found
    raise MariaDBUnavailable(
        f"{' or '.join(names)} not found: install Debian's mariadb-server-core "
        "(make test does it with apt-get)"
    )


class MariaDBServer:
    """One private server process; ``start`` and ``stop`` may alternate (the outage test)."""

    def __init__(
        self,
        base: pathlib.Path | None = None,
        port: int | None = None,
        options: Sequence[str] = (),
    ) -> None:
        """``options`` are more server options (``--ssl-cert=...``, say), given last."""
        # A short path: a unix socket's path may not exceed 107 bytes.
        self.base = base or pathlib.Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))
        self._owns_base = base is None
        self.port = port or free_port()
        self.datadir = self.base / "data"
        self.socket = self.base / "mariadb.sock"
        self.log_path = self.base / "error.log"
        self.options = tuple(options)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's URL, without a database: ``mysql://root:@127.0.0.1:PORT``."""
        return f"mysql://root:@127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        if self._process is None or self._process.poll() is not None:
            return None
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the process we started is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Initialise the data directory on first use, start the server, wait until it
        accepts connections; raises MariaDBUnavailable with the server's last log lines."""
        if self.running:
            return
        if not self.datadir.exists():
            self._install()
        command = [
            _binary("mariadbd", "mysqld"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            "--bind-address=127.0.0.1",
            f"--socket={self.socket}",
            f"--pid-file={self.base / 'mariadb.pid'}",
            f"--log-error={self.log_path}",
            f"--tmpdir={self.base}",
            "--skip-log-bin",
            "--character-set-server=utf8mb4",
            # Enough for the suites' concurrent operators and the query benchmark.
            "--max-connections=500",
            "--innodb-buffer-pool-size=512M",
            *self._user(),
            *self.options,
        ]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._answers():
            if not self.running or time.monotonic() > deadline:
                self.stop()
                raise MariaDBUnavailable(
                    f"the private MariaDB on port {self.port} did not start: {self._log_tail()}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server we started (SIGTERM: a clean InnoDB shutdown) and wait for it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def remove(self) -> None:
        """Stop, then delete the data directory if this object created its folder."""
        self.stop()
        if self._owns_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def _install(self) -> None:
        command = [
            _binary("mariadb-install-db", "mysql_install_db"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            # Its own, as the server's: a server starting removes every "#sql" file in
            # its tmpdir, so two runs bootstrapping at once in /tmp fail each other.
            f"--tmpdir={self.base}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            *self._user(),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise MariaDBUnavailable(
                f"mariadb-install-db failed ({result.returncode}): {result.stderr[-2000:]}"
            )

    @staticmethod
    def _user() -> list[str]:
        # mariadbd refuses to run as root unless told to; as anyone else it runs as them.
        return ["--user=root"] if os.geteuid() == 0 else []

    def _answers(self) -> bool:
        try:
            pymysql.connect(
                host="127.0.0.1", port=self.port, user="root", password="", connect_timeout=1
            ).close()
        except pymysql.err.OperationalError:
            return False
        return True

    def _log_tail(self) -> str:
        # The last lines say how it ended; the errors and warnings before them say why
        # (a Galera joiner's failed state transfer is logged well before it exits).
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "no error log"
        causes = [line for line in lines[-400:-5] if "[ERROR]" in line or "[Warning]" in line]
        return " | ".join([*causes[-15:], *lines[-5:]])


def connect(server_url: str, **options: Any) -> "pymysql.connections.Connection[Any]":
    """An autocommit admin connection to the server of a ``mysql://`` URL."""
    parts = urlsplit(server_url)
    return pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
        autocommit=True,
        **options,
    )


class Databases:
    """Uniquely named databases on a server, all dropped at the end: on a server we did
    not start (``JOBARCHIVE_TEST_MYSQL_URL``) these are the only things touched."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url.rstrip("/")
        self.names: list[str] = []

    def create(self, prefix: str) -> str:
        """Create a database; returns its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        with connect(self.server_url) as conn, conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        self.names.append(name)
        return f"{self.server_url}/{name}"

    def drop_all(self) -> None:
        """Drop every database this object created."""
        with connect(self.server_url) as conn, conn.cursor() as cursor:
            for name in self.names:
                cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
        self.names.clear()


def read_only_account(database_url: str) -> contextlib.AbstractContextManager[str]:
    """An account that may only SELECT from the database of ``database_url``
    (``limited_account``)."""
    return limited_account(database_url, "SELECT")


@contextlib.contextmanager
def limited_account(database_url: str, privileges: str) -> Iterator[str]:
    """A new account, of a random name and password, that has ``privileges`` (``SELECT,
    ALTER``, say) on the database of ``database_url`` and nothing else; yields that
    database's URL under it, and drops the account at the end."""
    parts = urlsplit(database_url)
    server_url = database_url.rsplit("/", 1)[0]
    database = parts.path.strip("/")
    user = f"limited_{uuid.uuid4().hex[:10]}"
    password = uuid.uuid4().hex
    with connect(server_url) as conn, conn.cursor() as cursor:
        cursor.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
        cursor.execute(f"GRANT {privileges} ON `{database}`.* TO '{user}'@'%'")
    try:
        yield f"mysql://{user}:{password}@{parts.hostname}:{parts.port or 3306}/{database}"
    finally:
        with connect(server_url) as conn, conn.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{user}'@'%'")


@contextlib.contextmanager
def server_for_run(external_url: str | None) -> Iterator[tuple[str, MariaDBServer | None]]:
    """The server a test run or benchmark uses: the external one named, else a private
    one started here and removed at the end. Yields its URL and the private server."""
    if external_url:
        yield external_url, None
        return
    server = MariaDBServer()
    try:
        server.start()
        yield server.url, server
    finally:
        server.remove()
