"""Scale: a large cluster caught up by one operator, then by two shards.

One emulated cluster (``testbed.fast_emulator``, which lists and watches as an API
server does, namespace by namespace as cheaply as etcd) holds ``--scale-jobs`` jobs of
five Kubeflow kinds spread evenly over ``--scale-namespaces`` namespaces,
``--scale-pods`` pods spread evenly over the jobs, and one Event about each pod. It is
caught up twice, each time into a fresh database: by one operator watching every
namespace, and by two operator processes started together, each given ``--namespace``
for half of the namespaces (the first half, the second half). The cluster is the same
object both times: the operators only read it.

Per setup: the catch-up time from the launch until every job, pod and Event row is
committed (row counts polled coarsely, as ``bench.e2e_bench`` does), rows per second,
and per operator process its peak RSS, its CPU seconds (user+sys) and the time its
own share was committed (its ``jobarchive_objects_total{outcome="stored"}``), besides
the CPU seconds of MariaDB and of this process (the emulated API server). The split is
checked, not assumed: the rows of every namespace are counted against the cluster, and
each shard, reading the cluster with a token of its own, must have listed and watched
the tracked kinds in its own namespaces only, never cluster-wide. An operator that
gives an object up (one that waited past the bounds of what waits, say) never commits
its row: that setup is stopped there and reported incomplete, a target missed.
"""

import argparse
import asyncio
import collections
import dataclasses
import pathlib
import tempfile
import time
from resource import RUSAGE_SELF, getrusage
from typing import Any

from tortoise.functions import Count

from bench import data
from bench.e2e_bench import MIB, cpu_seconds, total
from jobarchive.config import DbTls
from jobarchive.core.kinds import BUILTIN_KINDS, INTERMEDIATE_KINDS
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from testbed.cluster import EVENTS, NAMESPACES, PODS, Cluster, job_resource, resource_of
from testbed.fast_emulator import FastEmulator, fast_cluster
from testbed.mariadb import Databases
from testbed.operator import OperatorProcess, write_kubeconfig

# (name prefix, example spec, replica specs key) of the kinds mixed, one job in five each.
KINDS = (
    ("pytorchjob", "pytorch-simple.yaml", "pytorchReplicaSpecs"),
    ("tfjob", "tfjob-simple.yaml", "tfReplicaSpecs"),
    ("jaxjob", "jaxjob-simple.yaml", "jaxReplicaSpecs"),
    ("xgboostjob", "xgboostjob.yaml", "xgbReplicaSpecs"),
    ("paddlejob", "paddle-simple-gpu.yaml", "paddleReplicaSpecs"),
)
TRACKED = [PODS, EVENTS, *(job_resource(kind) for kind in (*BUILTIN_KINDS, *INTERMEDIATE_KINDS))]
# Long enough for a slow machine at the default size; a stuck run ends instead of hanging.
WITHIN = 3600.0
# What an operator counts as given up: such an object's row never comes, so the setup
# is stopped and reported incomplete at once instead of waited for.
LOST = ("dropped", "expired", "invalid", "refused")


def setting(text: str) -> str:
    """A ``--scale-env`` argument, ``NAME=VALUE``."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"not NAME=VALUE: {text!r}")
    return text


@dataclasses.dataclass
class Plan:
    """What the cluster holds: objects (jobs, pods, Events) per namespace."""

    jobs: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    pods: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)

    @property
    def namespaces(self) -> list[str]:
        return sorted(self.jobs | self.pods)

    def objects(self, namespaces: list[str]) -> int:
        """Objects of those namespaces: their jobs, pods and an Event per pod."""
        return sum(self.jobs[ns] + 2 * self.pods[ns] for ns in namespaces)


def fill(cluster: Cluster, pods: int, jobs: int, namespaces: int) -> Plan:
    """Put namespaces, jobs, their pods and an Event per pod straight into the store:
    jobs round-robin over the namespaces (kinds mixed within each), pods evenly over
    the jobs."""
    plan = Plan()
    store = cluster.emulator.objects
    names = [f"scale-{index:03d}" for index in range(namespaces)]
    for name in names:
        meta = {"name": name, "uid": f"ns-{name}", "resourceVersion": "1"}
        namespace_body = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}
        store[NAMESPACES.key, None, name] = namespace_body
    for index in range(jobs):
        namespace = names[index % namespaces]
        prefix, example, specs_key = KINDS[index % len(KINDS)]
        job = data.job_object(index // namespaces, namespace, example, prefix)
        resource = resource_of(job["apiVersion"].split("/")[0], job["kind"])
        store[resource.key, namespace, job["metadata"]["name"]] = job
        plan.jobs[namespace] += 1
        own = pods // jobs + (1 if index < pods % jobs else 0)
        for replica in range(own):
            pod = data.pod_object(job, replica, specs_key)
            store[PODS.key, namespace, pod["metadata"]["name"]] = pod
            event = data.event_object(pod)
            store[EVENTS.key, namespace, event["metadata"]["name"]] = event
        plan.pods[namespace] += own
    return plan


@dataclasses.dataclass
class Operator:
    """One operator process of a setup, the token it reads the cluster with, and its
    figures."""

    process: OperatorProcess
    token: str
    namespaces: list[str] | None
    share: int
    done: float = 0.0
    cpu: float = 0.0
    peak_rss: int = 0


@dataclasses.dataclass
class Setup:
    """One catch-up: its operators, and when the last row was committed."""

    operators: list[Operator]
    objects: int
    rows: int = 0
    lost: int = 0
    seconds: float = 0.0
    database_cpu: float = 0.0
    emulator_cpu: float = 0.0

    @property
    def complete(self) -> bool:
        return self.rows == self.objects

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def own_cpu() -> float:
    """CPU seconds of this process so far: the emulated API server, mostly."""
    usage = getrusage(RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def outcomes(process: OperatorProcess) -> collections.Counter[str]:
    """Objects the process counted, by outcome (none before its metrics answer)."""
    counted: collections.Counter[str] = collections.Counter()
    try:
        samples = await process.scrape()
    except OSError:
        return counted
    for (name, labels), value in samples.items():
        if name == "jobarchive_objects_total":
            counted[dict(labels)["outcome"]] += int(value)
    return counted


def prepare(
    cluster: Cluster,
    workdir: pathlib.Path,
    env: dict[str, str | None],
    plan: Plan,
    scopes: list[list[str] | None],
) -> list[Operator]:
    """One operator per scope (None: every namespace), each reading the cluster with a
    token of its own, so that the emulator tells their requests apart."""
    operators = []
    for index, scope in enumerate(scopes):
        directory = workdir / f"operator-{index}"
        directory.mkdir(parents=True)
        token = f"{workdir.name}-{index}"
        kubeconfig = directory / "kubeconfig"
        write_kubeconfig(kubeconfig, cluster.url)
        kubeconfig.write_text(kubeconfig.read_text().replace("emulator-token", token))
        process = OperatorProcess(directory, kubeconfig, env)
        share = plan.objects(plan.namespaces if scope is None else scope)
        operators.append(Operator(process, token, scope, share))
    return operators


async def catch_up(
    cluster: Cluster,
    workdir: pathlib.Path,
    env: dict[str, str | None],
    plan: Plan,
    scopes: list[list[str] | None],
    server: int | None,
) -> Setup:
    """Launch one operator per scope (None: every namespace) together, with ``env``
    (the database's URL), and wait until every row is committed, or until one gives an
    object up; returns the figures, checked against the plan."""
    setup = Setup(prepare(cluster, workdir, env, plan, scopes), plan.objects(plan.namespaces))
    url = env["JOBARCHIVE_DB_URL"]
    assert url is not None
    await db.open_database(url, encryption=DbTls())
    try:
        database_before, emulator_before = cpu_seconds(server), own_cpu()
        started = time.perf_counter()
        for operator in setup.operators:
            await operator.process.start(*[f"--namespace={ns}" for ns in operator.namespaces or ()])
        while (count := await total()) < setup.objects and not setup.lost:
            lost = 0
            for operator in setup.operators:
                if not operator.process.running:
                    raise AssertionError(f"an operator exited:\n{operator.process.log()[-5000:]}")
                counted = await outcomes(operator.process)
                lost += sum(counted[outcome] for outcome in LOST)
                if not operator.done and counted["stored"] >= operator.share:
                    operator.done = time.perf_counter() - started
            setup.lost = lost
            if time.perf_counter() - started > WITHIN:
                raise AssertionError(f"{count:,} of {setup.objects:,} rows after {WITHIN:.0f} s")
            # COUNT(*) scans: polled coarsely it would steal the database's CPU from the
            # operators being measured; finely only near the end, where timing matters.
            await asyncio.sleep(0.1 if count > 0.97 * setup.objects else 1.0)
        setup.seconds = time.perf_counter() - started
        setup.rows = count
        setup.database_cpu = cpu_seconds(server) - database_before
        setup.emulator_cpu = own_cpu() - emulator_before
        for operator in setup.operators:
            pid = operator.process.process.pid if operator.process.process else None
            operator.cpu = cpu_seconds(pid)
            operator.peak_rss = operator.process.peak_rss()
            operator.done = operator.done or setup.seconds
        if setup.complete:
            await check(plan)
    finally:
        for operator in setup.operators:
            await operator.process.stop()
        await db.close_database()
    assert isinstance(cluster.emulator, FastEmulator)
    outside = strays(cluster.emulator.gets, setup.operators)
    if outside:
        raise AssertionError(f"shards read outside their namespaces: {outside[:10]}")
    return setup


async def check(plan: Plan) -> None:
    """Every namespace's rows are exactly its objects, no more, no fewer."""
    jobs = dict(
        await Job.annotate(n=Count("job_id")).group_by("namespace").values_list("namespace", "n")
    )
    pods = dict(
        await Pod.annotate(n=Count("pod_id")).group_by("namespace").values_list("namespace", "n")
    )
    events = dict(
        await Event.annotate(n=Count("event_id"))
        .group_by("obj_namespace")
        .values_list("obj_namespace", "n")
    )
    spaces = set(plan.namespaces) | set(jobs) | set(pods) | set(events)
    wrong = {
        ns: (found, expected)
        for ns in sorted(spaces)
        if (found := (jobs.get(ns, 0), pods.get(ns, 0), events.get(ns, 0)))
        != (expected := (plan.jobs[ns], plan.pods[ns], plan.pods[ns]))
    }
    if wrong:
        raise AssertionError(f"rows per namespace, (found, expected): {wrong}")


def strays(gets: collections.Counter[tuple[str, str]], operators: list[Operator]) -> list[str]:
    """What a shard of ``operators`` read of a tracked kind outside its namespaces, a
    list or watch over every namespace included, as "token: path"."""
    own = {
        operator.token: {resource.path(ns) for resource in TRACKED for ns in operator.namespaces}
        for operator in operators
        if operator.namespaces is not None
    }
    tracked = {resource.plural for resource in TRACKED}
    return sorted(
        f"{token}: {path}"
        for token, path in gets
        if token in own and path.rsplit("/", 1)[-1] in tracked and path not in own[token]
    )


async def run(databases: Databases, line: Any, args: Any, server: int | None = None) -> bool:
    """Both setups on one cluster; prints their figures side by side. Whether both
    caught up whole."""
    pods, jobs, spaces = args.scale_pods, args.scale_jobs, args.scale_namespaces
    half = spaces // 2
    extra: dict[str, str | None] = dict(setting.split("=", 1) for setting in args.scale_env)
    print(
        f"Scale: {jobs:,} jobs ({len(KINDS)} kinds), {pods:,} pods, {pods:,} Events in "
        f"{spaces} namespaces: one operator, then two shards of {half} and {spaces - half}"
        + (f" ({' '.join(args.scale_env)})" if extra else "")
    )
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-scale-") as tmp:
        workdir = pathlib.Path(tmp)
        async with fast_cluster() as cluster:
            filling = time.perf_counter()
            plan = fill(cluster, pods, jobs, spaces)
            print(f"  (cluster filled in {time.perf_counter() - filling:.0f} s)", flush=True)
            env = {**extra, "JOBARCHIVE_DB_URL": databases.create("jobarchive_bench_scale_one")}
            one = await catch_up(cluster, workdir / "one", env, plan, [None], server)
            names = plan.namespaces
            env = {**extra, "JOBARCHIVE_DB_URL": databases.create("jobarchive_bench_scale_shards")}
            shards = await catch_up(
                cluster, workdir / "shards", env, plan, [names[:half], names[half:]], server
            )
    return report(one, shards, line)


def _each(values: list[float], fmt: str) -> str:
    return " / ".join(format(value, fmt) for value in values)


def _catch_up_line(line: Any, label: str, setup: Setup, note: str) -> None:
    """A setup's catch-up time, or how far it got and what it gave up."""
    if setup.complete:
        line(label, f"{setup.seconds:.1f}", note)
        return
    line(
        label,
        "incomplete",
        f"stopped at {setup.seconds:.0f} s: {setup.lost:,} objects given up (see the "
        f"operators' logs), {setup.rows:,} of {setup.objects:,} rows",
    )


def _costs(one: Setup, shards: Setup, line: Any) -> None:
    """Both setups' rates, peak memory and CPU, side by side."""
    single = one.operators[0]
    until = {True: "", False: "until stopped"}
    line("one operator: rows/s", f"{one.rate:,.0f}", until[one.complete])
    line("two shards: rows/s", f"{shards.rate:,.0f}", until[shards.complete])
    line("one operator: peak RSS MiB", f"{single.peak_rss / MIB:,.0f}", until[one.complete])
    line(
        "two shards: peak RSS MiB per process",
        _each([op.peak_rss / MIB for op in shards.operators], ",.0f"),
        until[shards.complete],
    )
    line(
        "one operator: CPU s",
        f"{single.cpu:.1f}",
        f"MariaDB {one.database_cpu:.1f}, emulator {one.emulator_cpu:.1f}",
    )
    line(
        "two shards: CPU s per process",
        _each([op.cpu for op in shards.operators], ".1f"),
        f"MariaDB {shards.database_cpu:.1f}, emulator {shards.emulator_cpu:.1f}",
    )


def report(one: Setup, shards: Setup, line: Any) -> bool:
    """Print both setups side by side, and their ratios; whether both caught up whole."""
    single = one.operators[0]
    _catch_up_line(line, "one operator: catch-up s", one, "")
    own = f"each shard's own: {_each([op.done for op in shards.operators], '.1f')} s"
    _catch_up_line(line, "two shards: catch-up s (slower shard)", shards, own)
    _costs(one, shards, line)
    memory_ratio = max(op.peak_rss for op in shards.operators) / single.peak_rss
    line("shards / one: peak RSS per process (larger)", f"{memory_ratio:.2f}")
    if not (one.complete and shards.complete):
        line(
            "verdict",
            "incomplete",
            "objects were given up, as an operator gives up what waits past its bounds "
            "(JOBARCHIVE_WAITING_MAX, JOBARCHIVE_WAITING_BYTES; --scale-env sets them)",
        )
        return False
    time_ratio = shards.seconds / one.seconds
    cpu_ratio = sum(op.cpu for op in shards.operators) / single.cpu
    line("shards / one: catch-up time", f"{time_ratio:.2f}")
    line("shards / one: operator CPU s, in all", f"{cpu_ratio:.2f}")
    faster = "faster" if time_ratio < 1 else "slower"
    line(
        "verdict",
        f"{faster} {max(time_ratio, 1 / time_ratio):.2f}x",
        f"two shards on this machine catch up {faster} than one operator, "
        f"each with {memory_ratio:.2f}x its peak memory",
    )
    return True
