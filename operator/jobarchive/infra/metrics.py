"""Prometheus metrics: what was recorded, how the database keeps up, what waits.

The metrics live in prometheus-client's default registry, beside its process
metrics (memory, CPU, open files). They are served by ``serve`` on the event
loop, through prometheus-client's own aiohttp handler, not from its thread: the
gauges read the writer's queue and the attribution maps, which only the loop may
touch.

Outcomes of ``jobarchive_objects_total``:

- ``stored``: a row version was committed (reconciliation's gone-marks included);
- ``skipped_stale``: the stored row was newer (the guard kept it), or a newer
  version of the same object was committed in the same batch;
- ``skipped_unrelated``: a pod or Event that belongs to no tracked job, or names one
  of another namespace;
- ``invalid``: the object could not be converted or attributed (logged with its name);
- ``refused``: the database refused the row (logged with its name);
- ``expired``: a pod or Event waited for its job or pod longer than the TTL;
- ``dropped``: a pod or Event was waiting when the waiting set reached its bounds
  (count or bytes), the oldest first (logged with its name).
"""

import platform
from collections.abc import Callable

from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram, Info
from prometheus_client.aiohttp import make_aiohttp_handler

from jobarchive import __version__
from jobarchive.infra.serving import listen

# ``jobarchive_build_info{version, python} 1``: which release each replica runs, as
# kube-state-metrics' and Prometheus' own build_info series say theirs.
BUILD = Info("jobarchive_build", "The version this process runs.")
BUILD.info({"version": __version__, "python": platform.python_version()})

OBJECTS = Counter(
    "jobarchive_objects",
    "Objects handled, by Kubernetes kind and outcome.",
    ["kind", "outcome"],
)
BATCH_SIZE = Histogram(
    "jobarchive_batch_rows",
    "Rows committed per transaction.",
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000),
)
COMMIT_SECONDS = Histogram(
    "jobarchive_commit_seconds",
    "Time to write and commit one batch.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
LAG_SECONDS = Histogram(
    "jobarchive_lag_seconds",
    "From an object's last change (its newest timestamp, whole seconds) to the commit "
    "of its row; watch events only, not the listing at start.",
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600),
)
DATABASE_ERRORS = Counter(
    "jobarchive_database_errors",
    "Failed database writes: unavailable (held and retried), retryable (deadlock or "
    "lock wait, retried), refused (the row was not stored).",
    ["reason"],
)
MARKED_GONE = Counter(
    "jobarchive_marked_gone",
    "Rows the reconciliation marked gone: deleted while nobody watched.",
    ["table"],
)
RECONCILIATIONS = Counter(
    "jobarchive_reconciliations",
    "Reconciliation runs, by result: done or failed.",
    ["result"],
)
ACTIVE = Gauge(
    "jobarchive_active",
    "1 while this replica is the active one in Kopf's peering, 0 while it stands by.",
)
QUEUE_DEPTH = Gauge("jobarchive_queue_depth", "Rows waiting to be written.")
WAITING = Gauge(
    "jobarchive_waiting_objects",
    "Pods waiting for their job, Events waiting for their pod.",
    ["kind"],
)
LOG_TAILS = Counter(
    "jobarchive_log_tails",
    "Failed containers' log tails, by outcome and reason: captured (complete, truncated), "
    "failed (not_found, bad_request, forbidden, server_error, timeout, unreachable, "
    "refused), skipped (per_pod, per_namespace, queue_full, already_captured, invalid, "
    "stopped).",
    ["outcome", "reason"],
)
LOG_TAIL_QUEUE = Gauge(
    "jobarchive_log_tail_queue",
    "Failed containers whose log waits to be read.",
)
FAILING_SECONDS = Gauge(
    "jobarchive_database_failing_seconds",
    "For how long writes have been failing for want of a database; 0 when they work.",
)


def watch_gauges(
    queue_depth: Callable[[], float],
    waiting: Callable[[], tuple[int, int]],
    failing_for: Callable[[], float],
) -> None:
    """Make the gauges read live values at scrape time."""
    QUEUE_DEPTH.set_function(queue_depth)
    WAITING.labels("Pod").set_function(lambda: waiting()[0])
    WAITING.labels("Event").set_function(lambda: waiting()[1])
    FAILING_SECONDS.set_function(failing_for)


async def serve(port: int) -> web.AppRunner | None:
    """Serve ``/metrics`` on all interfaces; None, logged, when the port cannot be bound."""
    app = web.Application()
    app.router.add_get("/metrics", make_aiohttp_handler())
    return await listen(app, "0.0.0.0", port, "Prometheus metrics at /metrics")
