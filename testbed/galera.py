"""A three-node MariaDB Galera cluster of the test bed's own, on loopback.

Each node is a private ``MariaDBServer`` (its own data directory, socket and free
port; the system's server is never touched) with the wsrep provider of Debian's
``galera-4`` loaded and three more free ports: group communication, incremental
state transfer and rsync's state transfer. The nodes run as the ``mysql`` user,
since rsync's state transfer refuses root, so their folders are handed to it. The
first node bootstraps the cluster (``--wsrep-new-cluster``) and the others join it;
``wait_synced`` waits on the cluster's own answers (``wsrep_cluster_size``,
``wsrep_ready``, ``wsrep_local_state``), never on time alone.

The group's timeouts are shortened (a node that stops answering is evicted after
about 3 s rather than 15 s) so that a test's kill costs seconds, not minutes.
"""

import contextlib
import os
import pathlib
import pwd
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence

import pymysql

from testbed.mariadb import PRIVATE_PREFIX, MariaDBServer, MariaDBUnavailable, connect
from testbed.ports import free_port

PROVIDER = pathlib.Path("/usr/lib/galera/libgalera_smm.so")
NODE_USER = "mysql"
SYNCED = 4
WAIT_SECONDS = 90.0
# Keepalives every 0.5 s, a silent peer suspected after 1.5 s and evicted after 3 s.
_TIMEOUTS = (
    "evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;"
    "evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S;"
    "gmcast.peer_timeout=PT2S;pc.announce_timeout=PT1S"
)


class GaleraUnavailable(MariaDBUnavailable):
    """galera-4, rsync or the ``mysql`` user is missing, or the cluster did not form."""


def missing() -> str | None:
    """Why a Galera cluster cannot be started here, or None when it can."""
    if not PROVIDER.exists():
        return f"{PROVIDER} not found: install Debian's galera-4 (tests/install-mariadb.sh)"
    if shutil.which("rsync") is None:
        return "rsync not found: install Debian's rsync (tests/install-mariadb.sh)"
    try:
        pwd.getpwnam(NODE_USER)
    except KeyError:
        return f"no {NODE_USER!r} user to run the nodes as (Debian's mariadb-server creates it)"
    if os.geteuid() != 0:
        return f"the nodes run as {NODE_USER!r}, which only root may start processes as"
    return None


class GaleraNode(MariaDBServer):
    """One node: a private server with the wsrep provider, run as ``mysql``."""

    def __init__(self, base: pathlib.Path, cluster: "GaleraCluster") -> None:
        self.group_port = free_port()
        self.ist_port = free_port()
        self.sst_port = free_port()
        self.cluster = cluster
        self.bootstrap = False
        base.mkdir()
        _give_to_node_user(base)
        super().__init__(base=base)

    def start(self) -> None:
        """Start (bootstrapping the cluster if ``bootstrap``), wait until it answers."""
        self.options = tuple(self._wsrep_options())
        super().start()

    def kill(self) -> None:
        """SIGKILL the node, as a lost host, and reap it."""
        pid = self.pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        self.stop()

    def status(self) -> dict[str, str]:
        """The node's ``wsrep_%`` status variables; empty when it does not answer."""
        try:
            with connect(self.url, connect_timeout=2) as conn, conn.cursor() as cursor:
                cursor.execute("SHOW GLOBAL STATUS LIKE 'wsrep_%'")
                return {str(name): str(value) for name, value in cursor.fetchall()}
        except pymysql.err.MySQLError:
            return {}

    def synced(self, size: int) -> bool:
        """Whether the node is ready, synced, and sees a primary component of ``size``."""
        found = self.status()
        return (
            found.get("wsrep_ready") == "ON"
            and found.get("wsrep_local_state") == str(SYNCED)
            and found.get("wsrep_cluster_size") == str(size)
            and found.get("wsrep_cluster_status") == "Primary"
        )

    def restore(self) -> None:
        """Back in the group and writable, as the node started; a node that does not
        answer is left to ``wait_synced`` to report."""
        with contextlib.suppress(pymysql.err.MySQLError):
            self.isolate(False)
            with connect(self.url, connect_timeout=2) as conn, conn.cursor() as cursor:
                cursor.execute("SET GLOBAL read_only = 0")

    def isolate(self, on: bool) -> None:
        """Cut the node off the group (it stays up, out of the primary component), or
        let it back."""
        with connect(self.url) as conn, conn.cursor() as cursor:
            value = 1 if on else 0
            cursor.execute(f"SET GLOBAL wsrep_provider_options='gmcast.isolate={value}'")

    def _wsrep_options(self) -> Iterator[str]:
        peers = ",".join(f"127.0.0.1:{node.group_port}" for node in self.cluster.nodes)
        yield "--wsrep-on=ON"
        yield f"--wsrep-provider={PROVIDER}"
        yield f"--wsrep-cluster-name={self.cluster.name}"
        yield f"--wsrep-cluster-address=gcomm://{peers}"
        yield f"--wsrep-node-address=127.0.0.1:{self.group_port}"
        yield f"--wsrep-node-incoming-address=127.0.0.1:{self.port}"
        yield f"--wsrep-sst-receive-address=127.0.0.1:{self.sst_port}"
        yield "--wsrep-sst-method=rsync"
        yield (
            f"--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{self.group_port};"
            f"ist.recv_addr=127.0.0.1:{self.ist_port};{_TIMEOUTS}"
        )
        yield "--binlog-format=ROW"
        yield "--innodb-autoinc-lock-mode=2"
        yield "--innodb-buffer-pool-size=64M"
        yield "--innodb-flush-log-at-trx-commit=0"
        if self.bootstrap:
            yield "--wsrep-new-cluster"

    @staticmethod
    def _user() -> list[str]:
        return [f"--user={NODE_USER}"]


class GaleraCluster:
    """Three nodes (or ``size``) under one temporary folder, removed at the end."""

    def __init__(self, size: int = 3) -> None:
        reason = missing()
        if reason is not None:
            raise GaleraUnavailable(reason)
        self.base = pathlib.Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX + "galera-"))
        _give_to_node_user(self.base)
        # gcomm refuses a group name over 32 bytes.
        self.name = "jobarchive-" + self.base.name[-8:]
        self.nodes: list[GaleraNode] = []
        for index in range(size):
            self.nodes.append(GaleraNode(self.base / f"node{index}", self))

    def start(self) -> None:
        """Bootstrap the first node, join the others one by one, wait until synced."""
        first, *others = self.nodes
        first.bootstrap = True
        first.start()
        first.bootstrap = False
        for node in others:
            node.start()
        self.wait_synced(self.nodes)

    def heal(self) -> None:
        """Undo what a failed test may have left: every node that is down started again
        while another is up, every running one let back into the group and writable;
        then wait synced."""
        if not any(node.running for node in self.nodes):
            raise GaleraUnavailable("every node of the Galera cluster is down")
        for node in self.nodes:
            if node.running:
                node.restore()
            else:
                node.start()
        self.wait_synced()

    def wait_synced(self, nodes: Sequence[GaleraNode] | None = None) -> None:
        """Wait until every node of ``nodes`` (all by default) is synced in a primary
        component of that many nodes; GaleraUnavailable with their states if not."""
        members = list(self.nodes if nodes is None else nodes)
        deadline = time.monotonic() + WAIT_SECONDS
        while not all(node.synced(len(members)) for node in members):
            if time.monotonic() > deadline:
                states = "; ".join(
                    f"{node.port}: {node.status().get('wsrep_local_state_comment', 'down')}"
                    for node in members
                )
                raise GaleraUnavailable(f"the Galera cluster did not sync: {states}")
            time.sleep(0.1)

    def url(self, *nodes: GaleraNode) -> str:
        """A multi-host server URL over ``nodes`` (all by default), without a database."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in nodes or self.nodes)
        return f"mysql://root:@{hosts}"

    def remove(self) -> None:
        """Stop every node and delete their folders."""
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.base, ignore_errors=True)


def _give_to_node_user(path: pathlib.Path) -> None:
    entry = pwd.getpwnam(NODE_USER)
    os.chown(path, entry.pw_uid, entry.pw_gid)


@contextlib.contextmanager
def galera_cluster(size: int = 3) -> Iterator[GaleraCluster]:
    """A started cluster of ``size`` nodes, removed at the end."""
    cluster = GaleraCluster(size)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()
