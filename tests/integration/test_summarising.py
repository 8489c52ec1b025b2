"""The efficiency pass on both databases (decision 45): which pods are due, in what
order, what one Prometheus answer, a refusal or an outage leaves in ``pod_efficiency``.
Prometheus here is an ``Asker`` of the test's that answers from a table: the real one is
met in the end-to-end tests."""

import datetime
import re
from collections.abc import Sequence
from typing import Any

import pytest

from jobarchive.core import promql
from jobarchive.core.efficiency import MEASURED, NO_DATA, REFUSED, TOO_SHORT, Sample
from jobarchive.core.rows import SummaryRow
from jobarchive.maintenance import retention, summarising
from jobarchive.maintenance.summarising import Asking, Summariser, Unreachable
from jobarchive.storage.models import Job, Pod, utcnow
from jobarchive.storage.store import Store
from jobarchive.storage.summaries import Summary
from tests.support import rows


class Refused(Exception):
    def __init__(self, text: str, retryable: bool) -> None:
        super().__init__(text)
        self.retryable = retryable


class Answers:
    """Prometheus' answers by pod name, each series labelled with its pod as the
    exporters label it; a name mapped to an exception makes the query naming it raise."""

    def __init__(self, answers: dict[str, list[Sample] | Exception]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, datetime.datetime]] = []
        self.queries = 0

    async def query(self, expression: str, at: datetime.datetime) -> Sequence[Sample]:
        self.queries += 1
        [names] = re.findall(r'[{,]pod=~"([^"]*)"', expression)[:1]
        found: list[Sample] = []
        # A PromQL string of a regular expression: each escape undone twice.
        for escaped in names.split("|"):
            name = re.sub(r"\\(.)", r"\1", escaped.replace("\\\\", "\\"))
            self.asked.append((name, at))
            answer = self.answers[name]
            if isinstance(answer, Exception):
                raise answer
            labels = {"namespace": "kubeflow", "pod": name}
            found += [Sample({**sample.labels, **labels}, sample.value) for sample in answer]
        return found


def ago(minutes: float, now: datetime.datetime | None = None) -> datetime.datetime:
    """Whole seconds, as a pod's times are."""
    return (now or utcnow()).replace(microsecond=0) - datetime.timedelta(minutes=minutes)


async def pods(*specs: tuple[str, float, float]) -> None:
    """Pods of one job, each (name, started minutes ago, finished minutes ago)."""
    now = utcnow()
    await Store().upsert(
        Pod,
        [
            rows.pod(
                f"uid-{name}",
                name=name,
                job_id="job-1",
                gpus=2,
                cpu_millis=1000,
                gmt_started=ago(start, now),
                gmt_finished=ago(end, now),
            )
            for name, start, end in specs
        ],
    )


async def summarised(answers: Answers, asking: Asking | None = None) -> Summariser:
    store = Store()

    async def write(found: list[SummaryRow]) -> None:
        await store.upsert(Summary, found)

    return Summariser(answers, lambda: store.cluster, write, asking or Asking(delay=60))


ACTIVE = [Sample({promql.FIGURE: "active_mean", "UUID": "GPU-0"}, 0.5)]


async def test_due_pods_are_asked_once_at_their_finish_in_the_order_they_finished(
    database: str,
) -> None:
    await pods(("late", 30, 5), ("early", 60, 20), ("recent", 10, 0.5), ("short", 20, 19.5))
    answers = Answers({"late": ACTIVE, "early": [], "recent": ACTIVE, "short": ACTIVE})
    summariser = await summarised(answers)
    assert await summariser.round() == 3
    assert [name for name, _ in answers.asked] == ["early", "late"]  # "short": 30 s run
    outcomes = {s.pod_name: s.outcome for s in await Summary.all()}
    assert outcomes == {"early": NO_DATA, "late": MEASURED, "short": TOO_SHORT}
    late = await Summary.get(pod_name="late")
    assert (late.gpu_activity_mean, late.gpus_seen, late.job_id) == (0.5, 1, "job-1")
    assert await summariser.round() == 0  # "recent" finished within the delay
    assert len(answers.asked) == 2


async def test_a_refusal_is_kept_and_asked_again_and_an_outage_keeps_pods_due(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    await pods(("bad", 60, 40), ("first", 60, 30), ("then", 60, 20))
    answers = Answers(
        {
            "bad": Refused("bad_data: parse error", retryable=False),
            "first": ACTIVE,
            "then": Refused("connection refused", retryable=True),
        }
    )
    summariser = await summarised(answers)
    with (
        caplog.at_level("WARNING", logger=summarising.__name__),
        pytest.raises(Unreachable, match="connection refused"),
    ):
        await summariser.round()
    stored = {s.pod_name: (s.outcome, s.note) for s in await Summary.all()}
    assert stored == {"bad": (REFUSED, "bad_data: parse error"), "first": (MEASURED, None)}
    said = [r.getMessage() for r in caplog.records if r.name == summarising.__name__]
    assert said == [
        "Not summarised, Prometheus refused the query of kubeflow/bad: bad_data: parse error"
    ]
    answers.answers["then"] = ACTIVE
    assert await summariser.round() == 1
    assert await Summary.filter(pod_name="then", outcome=MEASURED).count() == 1
    # The refused pod stays queued: not asked again within the hour of its refusal...
    answers.answers["bad"] = ACTIVE
    summariser.rescanned -= summarising.RESCAN + 1
    assert await summariser.round() == 0
    # ...but an hour after it, its row replaced by the answer.
    refused_at = utcnow() - datetime.timedelta(seconds=summarising.RESCAN + 60)
    await Summary.filter(pod_name="bad").update(gmt_modified=refused_at)
    summariser.rescanned -= summarising.RESCAN + 1
    assert await summariser.round() == 1
    assert await Summary.filter(pod_name="bad", outcome=MEASURED, note=None).count() == 1


async def test_pods_past_the_horizon_or_of_another_cluster_are_not_asked(database: str) -> None:
    await pods(("old", 60 * 24 * 20, 60 * 24 * 16), ("kept", 60, 30))
    await Store(cluster="west").upsert(Pod, [rows.pod("uid-west", name="west", job_id="j")])
    answers = Answers({"old": ACTIVE, "kept": ACTIVE, "west": ACTIVE})
    summariser = await summarised(answers, Asking(delay=60, horizon_days=15))
    assert await summariser.round() == 1
    assert [name for name, _ in answers.asked] == ["kept"]


async def test_a_jobs_summaries_are_pruned_with_it(database: str) -> None:
    long_ago = datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC)
    gone: dict[str, Any] = {"is_in_etcd": False, "status": "Succeeded", "gmt_finished": long_ago}
    await Store().upsert(Job, [rows.job("job-1", **gone), rows.job("kept")])
    await pods(("old", 60, 30))
    await Store().upsert(Pod, [rows.pod("uid-k", name="k", job_id="kept")])
    summariser = await summarised(Answers({"old": ACTIVE, "k": ACTIVE}))
    await summariser.round()
    assert await Summary.all().count() == 1
    await Pod.all().update(is_in_etcd=False)
    await retention.prune(retention.cutoff(90, utcnow()))
    assert await Summary.all().count() == 0


async def test_pods_that_ran_over_one_window_share_one_query_each_its_figures(
    database: str,
) -> None:
    await pods(("w-0", 60, 30), ("w-1", 60, 30), ("w-2", 60, 30), ("other", 61, 30))
    half = [Sample({promql.FIGURE: "active_mean", "UUID": "GPU-1"}, 0.25)]
    answers = Answers({"w-0": ACTIVE, "w-1": half, "w-2": [], "other": ACTIVE})
    assert await (await summarised(answers)).round() == 4
    assert answers.queries == 2
    found = {s.pod_name: (s.outcome, s.gpu_activity_mean) for s in await Summary.all()}
    assert found == {
        "w-0": (MEASURED, 0.5),
        "w-1": (MEASURED, 0.25),
        "w-2": (NO_DATA, None),
        "other": (MEASURED, 0.5),
    }


def test_a_log_line_names_a_few_pods_and_counts_the_rest() -> None:
    pods = [{"namespace": "ml", "name": f"w-{index}"} for index in range(5)]
    assert summarising.named(pods[:1]) == "ml/w-0"
    assert summarising.named(pods) == "ml/w-0, ml/w-1, ml/w-2 and 2 more"
