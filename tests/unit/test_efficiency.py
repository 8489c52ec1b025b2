"""A pod's efficiency from Prometheus' answer, a job's from its pods', and the advice,
each figure computed here by hand (decision 45)."""

from jobarchive.core import promql
from jobarchive.core.advice import advice, job_advice
from jobarchive.core.efficiency import (
    MEASURED,
    NO_DATA,
    TOO_SHORT,
    Allocated,
    PodEfficiency,
    Sample,
    summarise,
    too_short,
    weigh,
)

GIVEN = Allocated(run_seconds=3600, gpus=2, cpu_millis=4000, memory_bytes=8 * 2**30)


def gpu(figure: str, uuid: str, value: float, **labels: str) -> Sample:
    return Sample({promql.FIGURE: figure, "UUID": uuid, "gpu": uuid[-1], **labels}, value)


def answer(**extra: list[Sample]) -> list[Sample]:
    samples = [
        gpu("active_mean", "GPU-0", 0.6),
        gpu("active_peak", "GPU-0", 0.9),
        gpu("active_mean", "GPU-1", 0.0),
        gpu("active_peak", "GPU-1", 0.0),
        gpu("fb_used_peak", "GPU-0", 60.0),
        gpu("fb_used_mean", "GPU-0", 40.0),
        gpu("fb_free_mean", "GPU-0", 40.0),
        gpu("energy_last", "GPU-0", 9_000_000.0),
        gpu("energy_first", "GPU-0", 1_000_000.0),
        Sample({promql.FIGURE: "cpu_last", "container": "a", "id": "/a"}, 5000.0),
        Sample({promql.FIGURE: "cpu_first", "container": "a", "id": "/a"}, 200.0),
        Sample({promql.FIGURE: "cpu_last", "container": "b", "id": "/b"}, 100.0),
        Sample({promql.FIGURE: "cpu_first", "container": "b", "id": "/b"}, 100.0),
        Sample({promql.FIGURE: promql.MEMORY_PEAK}, 2 * 2**30),
    ]
    for more in extra.values():
        samples += more
    return samples


def test_a_pods_figures_are_the_hand_computed_ones() -> None:
    found = summarise(answer(), GIVEN)
    assert found.outcome == MEASURED
    assert found.source == "engine_active"
    assert found.gpu_activity_mean == 0.3  # (0.6 + 0.0) / 2
    assert found.gpu_activity_peak == 0.9
    assert found.gpu_memory_peak == 0.75  # 60 / (40 + 40)
    assert (found.gpus_seen, found.unused_gpus) == (2, 1)
    assert found.energy_joules == 8000.0  # (9e6 - 1e6) mJ
    assert found.cpu_seconds == 4800.0  # (5000 - 200) + (100 - 100)
    assert found.cpu_efficiency == 4800 / (4 * 3600)
    assert found.memory_peak_ratio == 0.25


def test_utilisation_stands_in_for_engine_activity_as_a_ratio() -> None:
    found = summarise([gpu("util_mean", "GPU-0", 40.0), gpu("util_peak", "GPU-0", 100.0)], GIVEN)
    assert (found.source, found.gpu_activity_mean, found.gpu_activity_peak) == (
        "gpu_util",
        0.4,
        1.0,
    )


def test_engine_activity_is_preferred_where_both_are_exported() -> None:
    found = summarise(answer(more=[gpu("util_mean", "GPU-0", 100.0)]), GIVEN)
    assert found.source == "engine_active"


def test_what_prometheus_lacks_is_unknown_never_zero() -> None:
    assert summarise([], GIVEN) == PodEfficiency(NO_DATA)
    cpu_only = summarise(answer()[9:13], GIVEN)
    assert cpu_only.gpu_activity_mean is None and cpu_only.unused_gpus is None
    assert cpu_only.energy_joules is None and cpu_only.memory_peak_ratio is None
    nan = summarise([gpu("active_mean", "GPU-0", float("nan"))], GIVEN)
    assert nan == PodEfficiency(NO_DATA)


def test_mig_instances_of_one_gpu_are_told_apart() -> None:
    found = summarise(
        [
            gpu("active_mean", "GPU-0", 0.2, GPU_I_ID="1"),
            gpu("active_mean", "GPU-0", 0.4, GPU_I_ID="2"),
        ],
        GIVEN,
    )
    assert [g.gpu for g in found.per_gpu] == ["GPU-0/1", "GPU-0/2"]
    assert found.gpu_activity_mean is not None and round(found.gpu_activity_mean, 9) == 0.3


def test_a_run_shorter_than_two_scrapes_is_too_short() -> None:
    assert too_short(59, 30) and not too_short(60, 30)


def test_a_jobs_means_are_weighted_by_what_each_pod_was_given() -> None:
    big = Allocated(run_seconds=7200, gpus=4, cpu_millis=1000, memory_bytes=100)
    small = Allocated(run_seconds=3600, gpus=1, cpu_millis=3000, memory_bytes=300)
    figures = weigh(
        [
            (
                big,
                PodEfficiency(
                    MEASURED,
                    gpu_activity_mean=0.5,
                    unused_gpus=2,
                    cpu_efficiency=0.5,
                    memory_peak_ratio=0.2,
                    energy_joules=3.6e6,
                ),
            ),
            (
                small,
                PodEfficiency(
                    MEASURED,
                    gpu_activity_mean=1.0,
                    unused_gpus=0,
                    cpu_efficiency=1.0,
                    memory_peak_ratio=0.6,
                ),
            ),
            (small, None),
            (small, PodEfficiency(TOO_SHORT)),
        ]
    )
    assert figures.gpu_hours == 8 + 1 + 1 + 1
    assert figures.gpu_activity_mean == (8 * 0.5 + 1 * 1.0) / 9
    assert figures.idle_gpu_hours == 8 * 0.5 + 0
    assert (figures.unused_gpus, figures.unused_gpu_hours) == (2, 4.0)
    assert figures.cpu_efficiency == (2 * 0.5 + 3 * 1.0) / 5  # by CPU-hours requested
    assert figures.mem_peak_ratio == (200 * 0.2 + 300 * 0.6) / 500
    assert figures.energy_kwh == 1.0
    assert (figures.pods, figures.unknown, figures.too_short) == (4, 1, 1)


def test_a_job_with_no_summary_says_so_and_no_figure() -> None:
    figures = weigh([(GIVEN, None)])
    assert figures.gpu_activity_mean is None and figures.idle_gpu_hours is None
    assert (figures.unknown, figures.gpu_hours) == (1, 2.0)


def test_the_advice_names_each_threshold_crossed() -> None:
    pods = [
        (
            Allocated(3600, 8, 8000, 100),
            PodEfficiency(
                MEASURED,
                gpu_activity_mean=0.09,
                unused_gpus=2,
                gpu_memory_peak=0.1,
                cpu_efficiency=0.1,
                memory_peak_ratio=0.12,
            ),
        )
    ]
    assert advice(weigh(pods), gpus=8) == [
        "8 GPUs requested, 2 never used: request 6",
        "GPU activity 9%: the input pipeline is the likely bottleneck",
        "GPU memory peak 10%: a smaller GPU or a MIG slice would hold it",
        "CPU efficiency 10%: request fewer CPUs",
        "memory peak 12% of the limit",
    ]
    assert advice(weigh([(GIVEN, None)]), gpus=2) == ["1 of 1 pods have no data in Prometheus"]


Pods = list[tuple[Allocated, PodEfficiency | None]]


def busy(unused: int, active: float, cpu: float = 0.5) -> PodEfficiency:
    return PodEfficiency(MEASURED, gpu_activity_mean=active, unused_gpus=unused, cpu_efficiency=cpu)


def test_a_job_of_several_replica_types_is_advised_per_type() -> None:
    master: Pods = [(Allocated(3600, 8, 8000, 100), busy(0, 0.9, cpu=0.1))]
    workers: Pods = [
        (Allocated(3600, 4, 8000, 100), busy(1, 0.1)),
        (Allocated(3600, 4, 8000, 100), busy(1, 0.3)),
    ]
    silent: Pods = [(Allocated(3600, 2, 1000, 100), None)]
    replicas = {
        "Worker": (weigh(workers), 8),
        "Master": (weigh(master), 8),
        "Evaluator": (weigh(silent), 0),
    }
    job = weigh(master + workers + silent)
    # Job-wide it would read "16 GPUs requested, 2 never used: request 14": no request
    # anyone can make of a master and workers.
    assert job_advice(job, 16, replicas) == [
        "Master: CPU efficiency 10%: request fewer CPUs",
        "Worker: 8 GPUs requested, 2 never used: request 6",
        "1 of 4 pods have no data in Prometheus",
    ]
    # Job-wide, the master's 90% would hide the workers' 10%.
    workers[1] = (workers[1][0], busy(1, 0.1))
    replicas["Worker"] = (weigh(workers), 8)
    assert job_advice(weigh(master + workers + silent), 16, replicas)[1:3] == [
        "Worker: 8 GPUs requested, 2 never used: request 6",
        "Worker: GPU activity 10%: the input pipeline is the likely bottleneck",
    ]


def test_a_job_of_one_replica_type_is_advised_as_a_whole() -> None:
    workers = [
        (Allocated(3600, 4, 8000, 100), busy(1, 0.1)),
        (Allocated(3600, 4, 8000, 100), busy(1, 0.1)),
    ]
    figures = weigh(workers)
    expected = [
        "8 GPUs requested, 2 never used: request 6",
        "GPU activity 10%: the input pipeline is the likely bottleneck",
    ]
    assert job_advice(figures, 8, {"Worker": (figures, 8)}) == expected
    assert job_advice(figures, 8, {}) == expected == advice(figures, 8)


TARGET = promql.Target(
    namespace="team-a",
    pods=[('odd"name', "u-1"), ("w.1", "u-2")],
    run_seconds=90.2,
    scrape_interval=30,
    label_pairs=(("namespace", "pod"), ("exported_namespace", "exported_pod")),
)


def test_the_query_selects_the_pods_by_each_label_pair_their_uids_and_containers() -> None:
    text = promql.query(TARGET)
    pods = 'pod=~"odd\\"name|w\\\\.1",pod_uid=~"u\\\\-1|u\\\\-2|"'
    assert f'avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{namespace="team-a",{pods}}}[91s])' in text
    assert f'exported_namespace="team-a",exported_{pods}}}[91s]' in text
    assert (
        f'container_cpu_usage_seconds_total{{namespace="team-a",{pods},container!="",container!="POD"}}[91s]'
        in text
    )
    assert "max_over_time(sum by (namespace, pod) (container_memory_working_set_bytes{" in text
    assert "[91s:30s])" in text
    assert all(f'"{promql.FIGURE}", "{figure}"' in text for figure in promql.FIGURES)


def test_an_answers_series_is_its_pods_by_the_first_label_pair_naming_one() -> None:
    assert promql.owner({"namespace": "team-a", "pod": "w.1"}, TARGET) == "w.1"
    relabelled = {
        "namespace": "gpu-operator",
        "pod": "dcgm-x",
        "exported_namespace": "team-a",
        "exported_pod": 'odd"name',
    }
    assert promql.owner(relabelled, TARGET) == 'odd"name'
    assert promql.owner({"namespace": "team-b", "pod": "w.1"}, TARGET) is None
    assert promql.owner({"namespace": "team-a", "pod": "w"}, TARGET) is None
