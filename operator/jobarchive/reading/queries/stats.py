"""Counts over a window of creation: jobs by a column with their durations, jobs per
day, the failed pods' failure classes. Each reads the jobs through their creation-time index (or
their status's), and answers a few rows whatever the window. GPU-hours are not counted
here but by the usage roll-up (``rollups``), their one definition."""

import datetime
from typing import Any

from jobarchive.reading import usage
from jobarchive.reading.params import (
    DEFAULT_GROUP,
    STATS_GROUPS,
    BadQuery,
    Clusters,
    Named,
    check_namespace,
)
from jobarchive.storage import dialects
from jobarchive.storage.readpool import reader

# How many classes a chart of failures shows; the rest are few by construction.
FAILURE_CLASSES = 20


def _window_sql(
    dialect: dialects.Dialect,
    column: str,
    since: datetime.datetime | None,
    until: datetime.datetime | None,
) -> tuple[list[str], list[Any]]:
    where, params = [], []
    for clause, value in ((f"{column} >= ", since), (f"{column} < ", until)):
        if value is not None:
            where.append(clause + dialect.placeholder)
            params.append(value.astimezone(datetime.UTC).replace(tzinfo=None))
    return where, params


def _clusters_sql(
    dialect: dialects.Dialect, column: str, clusters: Clusters
) -> tuple[list[str], list[Any]]:
    """The WHERE of a caller's clusters (decision 36): none, one, or a scope's."""
    if clusters is None:
        return [], []
    names = [clusters] if isinstance(clusters, str) else list(clusters)
    if not names:
        return ["1 = 0"], []
    marks = ", ".join(dialect.placeholder for _ in names)
    return [f"{column} IN ({marks})"], names


async def stats(
    group_by: str | None = None,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
    namespace: str | None = None,
    clusters: Clusters = None,
) -> list[dict[str, Any]]:
    """Jobs created in [since, until) (of one namespace when named, of the ``clusters``)
    counted by a column
    (``DEFAULT_GROUP`` when none), with how long the finished ones took: count, finished,
    average and longest duration in seconds."""
    group = DEFAULT_GROUP if group_by is None else group_by
    if group not in STATS_GROUPS:
        raise BadQuery(Named("by"), f": {group!r} is not one of {', '.join(STATS_GROUPS)}")
    connection = reader()
    dialect = dialects.of(connection)
    where, params = _window_sql(dialect, "gmt_created", since, until)
    if namespace is not None:
        where.append(f"namespace = {dialect.placeholder}")
        params.append(check_namespace(namespace))
    among, names = _clusters_sql(dialect, "cluster", clusters)
    where, params = where + among, params + names
    duration = dialect.seconds_between("gmt_created", "gmt_finished")
    grp = dialect.exact(group)
    sql = (
        f"SELECT {grp} AS grp, COUNT(*) AS jobs, COUNT(gmt_finished) AS finished, "
        f"AVG({duration}) AS avg_seconds, MAX({duration}) AS max_seconds "
        f"FROM job_info {'WHERE ' + ' AND '.join(where) if where else ''} "
        f"GROUP BY {grp} ORDER BY jobs DESC, grp"
    )
    _, rows = await connection.execute_query(sql, params)
    return [
        {
            group: row["grp"],
            "jobs": int(row["jobs"]),
            "finished": int(row["finished"]),
            "avg_duration_seconds": _number(row["avg_seconds"]),
            "max_duration_seconds": _number(row["max_seconds"]),
        }
        for row in rows
    ]


def _number(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)


async def jobs_per_day(
    since: datetime.datetime, until: datetime.datetime, clusters: Clusters = None
) -> list[dict[str, Any]]:
    """Jobs created in [since, until) of the ``clusters`` counted per UTC day and status
    (``day`` as YYYY-MM-DD), read through the creation-time index."""
    connection = reader()
    where, params = _window_sql(dialects.of(connection), "gmt_created", since, until)
    among, names = _clusters_sql(dialects.of(connection), "cluster", clusters)
    where, params = where + among, params + names
    sql = (
        "SELECT DATE(gmt_created) AS day, status, COUNT(*) AS jobs FROM job_info "
        f"WHERE {' AND '.join(where)} GROUP BY DATE(gmt_created), status"
    )
    _, rows = await connection.execute_query(sql, params)
    return [
        {"day": str(row["day"])[:10], "status": row["status"], "jobs": int(row["jobs"])}
        for row in rows
    ]


async def failed_pod_classes(
    since: datetime.datetime, until: datetime.datetime, clusters: Clusters = None
) -> list[dict[str, Any]]:
    """The failed pods of the failed jobs created in [since, until) of the ``clusters``
    (a job's pods are its cluster's), counted by their own failure class (decision 42;
    ``usage.UNCLASSIFIED`` until the classifying pass has filed them), most first.

    Read through the jobs' (status, gmt_created) index, then each job's pods by theirs
    and each pod's class by its uid.
    """
    connection = reader()
    dialect = dialects.of(connection)
    where, params = _window_sql(dialect, "j.gmt_created", since, until)
    among, names = _clusters_sql(dialect, "j.cluster", clusters)
    where, params = where + among, params + names
    placeholder = dialect.placeholder
    named = f"COALESCE(f.failure_class, '{usage.UNCLASSIFIED}')"
    sql = (
        f"SELECT {named} AS failure_class, COUNT(*) AS pods, COUNT(DISTINCT j.job_id) AS jobs "
        "FROM job_info j JOIN replica_info p ON p.job_id = j.job_id "
        "LEFT JOIN pod_failure f ON f.pod_id = p.pod_id "
        f"WHERE j.status = {placeholder} AND {' AND '.join(where)} "
        f"AND p.status = {placeholder} "
        f"GROUP BY {named} ORDER BY pods DESC, failure_class LIMIT {FAILURE_CLASSES}"
    )
    _, rows = await connection.execute_query(sql, ["Failed", *params, "Failed"])
    return [
        {"failure_class": row["failure_class"], "pods": int(row["pods"]), "jobs": int(row["jobs"])}
        for row in rows
    ]
