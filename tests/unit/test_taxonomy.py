"""The failure taxonomy (decision 42): every shipped rule on real log excerpts
(tests/fixtures/logs, each naming where it was taken from) and on the evidence
Kubernetes and Kueue record, the order of the rules, the detail lines, a job's failure,
and tails far beyond any bound."""

import datetime
import pathlib
import time

import pytest

from jobarchive.core import scanning
from jobarchive.core.ruletable import rules_from
from jobarchive.core.taxonomy import (
    UNKNOWN,
    ContainerState,
    Failure,
    KueueEviction,
    PodEvidence,
    PodFailure,
    Reported,
    classify,
    job_failure,
    pod_failure,
)
from jobarchive.infra.rules import load_rules

LOGS = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "logs"
RULES = load_rules()
T0 = datetime.datetime(2026, 3, 1, 12, 0, tzinfo=datetime.UTC)
# The classes in the order the issue lists them, Unknown being no rule's.
ORDER = [
    "OOMKilled",
    "GPUOutOfMemory",
    "NCCLError",
    "GPUHardware",
    "Preempted",
    "Evicted",
    "NodeFailure",
    "ImagePull",
    "ConfigError",
    "DeadlineExceeded",
    "BackoffLimitExceeded",
    "UserError",
    "Error",
]


def excerpt(name: str) -> str:
    """A fixture's log lines, without the header line naming its source."""
    header, _, body = (LOGS / name).read_text().partition("\n")
    assert header.startswith("# Source: https://github.com/")
    return body


def failed(tail: str | None = None, reason: str = "Error", code: int = 1) -> PodEvidence:
    """A pod whose one container failed with this tail."""
    return PodEvidence("trainer-0", (ContainerState("pytorch", reason, exit_code=code, tail=tail),))


# Each excerpt: the class its tail gives a failed container, and how its detail begins.
EXCERPTS = {
    "pytorch-cuda-oom.log": (
        "GPUOutOfMemory",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ),
    "pytorch-cuda-oom-torch-cuda.log": (
        "GPUOutOfMemory",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.69 GiB",
    ),
    "pytorch-cuda-oom-runtimeerror.log": (
        "GPUOutOfMemory",
        "RuntimeError: CUDA out of memory. Tried to allocate 1006.00 MiB",
    ),
    "rocm-hip-oom.log": (
        "GPUOutOfMemory",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 MiB.",
    ),
    "tensorflow-oom.log": (
        "GPUOutOfMemory",
        "2018-06-08 17:26:00.908130: W tensorflow/core/framework/op_kernel.cc:1202] "
        "OP_REQUIRES failed at tile_ops.cc:123 : Resource exhausted: OOM when allocating",
    ),
    "jax-oom.log": (
        "GPUOutOfMemory",
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
        "to allocate 6291456 bytes.",
    ),
    "deepspeed-cuda-oom.log": (
        "GPUOutOfMemory",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 198.00 MiB (GPU 0; 31.75",
    ),
    "deepspeed-multinode-oom.log": (
        "GPUOutOfMemory",
        "gpu-q-13: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 896.00 MiB",
    ),
    "nccl-watchdog-timeout.log": (
        "NCCLError",
        "[rank2]:[E626 06:24:44.173078629 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE,",
    ),
    "nccl-watchdog-terminate.log": (
        "NCCLError",
        "what(): [Rank 6] NCCL watchdog thread terminated with exception: [Rank 6] Watchdog "
        "caught collective operation timeout",
    ),
    "nccl-heartbeat.log": (
        "NCCLError",
        "[rank0]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 0] [PG 0 Rank 0] ProcessGroupNCCL's "
        "watchdog got stuck for 600 seconds",
    ),
    "nccl-system-error.log": (
        "NCCLError",
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1691, unhandled system error",
    ),
    "nccl-error-then-traceback.log": (
        "NCCLError",
        "Nov 20 16:03:25 RuntimeError: NCCL error in: /var/lib/jenkins/workspace/torch/lib/c10d/"
        "ProcessGroupNCCL.cpp:404, unhandled system error, NCCL version 2.5.6",
    ),
    "xid-fallen-off-bus.log": ("GPUHardware", "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off"),
    "ecc-under-nccl-watchdog.log": (
        "GPUHardware",
        "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: "
        "CUDA error: uncorrectable ECC error encountered",
    ),
    "accelerate-ecc.log": ("GPUHardware", "RuntimeError: CUDA error: uncorrectable ECC error"),
    "python-valueerror.log": (
        "UserError",
        "ValueError: Expected input batch_size (1216) to match target batch_size (1280)",
    ),
    "python-keyerror.log": ("UserError", "KeyError: 'RANK'"),
    "torchrun-child-failed.log": (
        "UserError",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ),
    "deepspeed-sigkill.log": ("Error", "exit code 1"),
}


@pytest.mark.parametrize(("name", "expected"), sorted(EXCERPTS.items()))
def test_each_excerpt_is_classified_with_its_detail(name: str, expected: tuple[str, str]) -> None:
    failure = classify(failed(excerpt(name)), RULES)
    assert (failure.failure_class, failure.container, failure.exit_code) == (
        expected[0],
        "pytorch",
        1,
    )
    assert failure.detail is not None and failure.detail.startswith(expected[1]), failure.detail


def test_every_fixture_names_its_source_and_is_in_the_table() -> None:
    assert {path.name for path in LOGS.glob("*.log")} == set(EXCERPTS)
    for name in EXCERPTS:
        assert len(excerpt(name).splitlines()) <= 40, name


def test_the_shipped_rules_are_in_the_issues_order() -> None:
    assert [rule.failure_class for rule in RULES] == ORDER


EVICTED_FOR_MEMORY = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 89344Ki. "
    "Container pytorch was using 61Gi, request is 32Gi, has larger consumption of memory. "
)
# What Kubernetes and Kueue record, as their sources write it: (case, evidence, class, detail).
EVIDENCE = [
    ("killed for memory", failed(None, "OOMKilled", 137), "OOMKilled", "OOMKilled"),
    (
        "scheduler's preemption",
        PodEvidence(
            "trainer-0",
            disruption=Reported(
                "PreemptionByScheduler",
                "default-scheduler: preempting to accommodate a higher priority pod",
            ),
        ),
        "Preempted",
        "PreemptionByScheduler: default-scheduler: preempting to accommodate a higher priority pod",
    ),
    (
        "scheduler's event",
        PodEvidence(
            "trainer-0", events=(Reported("Preempted", "Preempted by pod 7f3c on node gpu-3"),)
        ),
        "Preempted",
        "Preempted: Preempted by pod 7f3c on node gpu-3",
    ),
    (
        "Kueue's preemption",
        PodEvidence(
            "trainer-0",
            kueue=KueueEviction(
                "Preempted", "InCohortReclamation", "Preempted to accommodate a workload"
            ),
        ),
        "Preempted",
        "Kueue Preempted (InCohortReclamation): Preempted to accommodate a workload",
    ),
    (
        "node pressure",
        PodEvidence("trainer-0", status=Reported("Evicted", EVICTED_FOR_MEMORY)),
        "Evicted",
        "Evicted: " + EVICTED_FOR_MEMORY.strip(),
    ),
    (
        "a drain",
        PodEvidence("trainer-0", disruption=Reported("EvictionByEvictionAPI", "Eviction API")),
        "Evicted",
        "EvictionByEvictionAPI: Eviction API",
    ),
    (
        "Kueue's PodsReady timeout",
        PodEvidence(
            "trainer-0",
            kueue=KueueEviction(
                "PodsReadyTimeout", "WaitForStart", "Exceeded the PodsReady timeout ml/llama"
            ),
        ),
        "Evicted",
        "Kueue PodsReadyTimeout (WaitForStart): Exceeded the PodsReady timeout ml/llama",
    ),
    (
        "Kueue's node failures",
        PodEvidence("trainer-0", kueue=KueueEviction("NodeFailures")),
        "Evicted",
        "Kueue NodeFailures",
    ),
    (
        "node lost",
        PodEvidence(
            "trainer-0",
            status=Reported(
                "NodeLost", "Node gpu-7 which was running pod trainer-0 is unresponsive"
            ),
        ),
        "NodeFailure",
        "NodeLost: Node gpu-7 which was running pod trainer-0 is unresponsive",
    ),
    (
        "graceful node shutdown",
        PodEvidence(
            "trainer-0",
            status=Reported(
                "Terminated", "Pod was terminated in response to imminent node shutdown."
            ),
        ),
        "NodeFailure",
        "Terminated: Pod was terminated in response to imminent node shutdown.",
    ),
    (
        "taint manager",
        PodEvidence(
            "trainer-0",
            disruption=Reported(
                "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"
            ),
        ),
        "NodeFailure",
        "DeletionByTaintManager: Taint manager: deleting due to NoExecute taint",
    ),
    (
        "node not ready",
        PodEvidence("trainer-0", events=(Reported("NodeNotReady", "Node is not ready"),)),
        "NodeFailure",
        "NodeNotReady: Node is not ready",
    ),
    (
        "image pull backing off",
        PodEvidence(
            "trainer-0",
            (
                ContainerState(
                    "pytorch", "ImagePullBackOff", 'Back-off pulling image "nvcr.io/x:1"'
                ),
            ),
        ),
        "ImagePull",
        'ImagePullBackOff: Back-off pulling image "nvcr.io/x:1"',
    ),
    (
        "image pull event",
        PodEvidence(
            "trainer-0",
            events=(Reported("Failed", 'Failed to pull image "nvcr.io/x:1": not found'),),
        ),
        "ImagePull",
        'Failed: Failed to pull image "nvcr.io/x:1": not found',
    ),
    (
        "missing secret",
        PodEvidence(
            "trainer-0",
            (ContainerState("pytorch", "CreateContainerConfigError", 'secret "hf" not found'),),
        ),
        "ConfigError",
        'CreateContainerConfigError: secret "hf" not found',
    ),
    (
        "missing volume",
        PodEvidence(
            "trainer-0",
            events=(
                Reported(
                    "FailedMount",
                    'MountVolume.SetUp failed for volume "data" : configmap "data" not found',
                ),
            ),
        ),
        "ConfigError",
        'FailedMount: MountVolume.SetUp failed for volume "data" : configmap "data" not found',
    ),
    (
        "pod's deadline",
        PodEvidence(
            "trainer-0",
            status=Reported(
                "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
            ),
        ),
        "DeadlineExceeded",
        "DeadlineExceeded: Pod was active on the node longer than the specified deadline",
    ),
    (
        "job's deadline",
        PodEvidence(
            "trainer-0",
            events=(Reported("DeadlineExceeded", "Job was active longer than specified deadline"),),
        ),
        "DeadlineExceeded",
        "DeadlineExceeded: Job was active longer than specified deadline",
    ),
    (
        "job's backoff limit",
        PodEvidence(
            "trainer-0",
            events=(
                Reported("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
            ),
        ),
        "BackoffLimitExceeded",
        "BackoffLimitExceeded: Job has reached the specified backoff limit",
    ),
    ("an exit code alone", failed(None), "Error", "exit code 1"),
    (
        "an exit code and a termination message",
        PodEvidence("trainer-0", (ContainerState("pytorch", "Error", "no config.yaml", 2),)),
        "Error",
        "exit code 2: no config.yaml",
    ),
    ("nothing", PodEvidence("trainer-0"), UNKNOWN, None),
    (
        "a status no rule knows",
        PodEvidence("trainer-0", status=Reported("UnexpectedAdmissionError", "Allocate failed")),
        UNKNOWN,
        "UnexpectedAdmissionError: Allocate failed",
    ),
]


@pytest.mark.parametrize(
    ("evidence", "failure_class", "detail"),
    [case[1:] for case in EVIDENCE],
    ids=[case[0] for case in EVIDENCE],
)
def test_each_kind_of_evidence_is_classified(
    evidence: PodEvidence, failure_class: str, detail: str | None
) -> None:
    failure = classify(evidence, RULES)
    assert (failure.failure_class, failure.detail) == (failure_class, detail)


def test_every_shipped_class_is_tested() -> None:
    tested = {expected[0] for expected in EXCERPTS.values()} | {case[2] for case in EVIDENCE}
    assert tested == set(ORDER) | {UNKNOWN}


def test_an_oom_killed_container_whose_tail_shows_nccl_errors_is_oom_killed() -> None:
    evidence = failed(excerpt("nccl-watchdog-timeout.log"), "OOMKilled", 137)
    assert classify(evidence, RULES) == Failure("OOMKilled", "pytorch", 137, 9, "OOMKilled")


def test_a_cuda_oom_before_an_nccl_timeout_in_one_tail_is_the_oom() -> None:
    # The rank that ran out of memory may log its peers' collective timing out as it dies.
    tail = excerpt("pytorch-cuda-oom.log") + excerpt("nccl-watchdog-timeout.log")
    assert classify(failed(tail), RULES).failure_class == "GPUOutOfMemory"


def test_a_job_whose_rank_ran_out_of_gpu_memory_is_that_not_its_peers_timeouts() -> None:
    # The rank that ran out dies first; its peers time out ten minutes later.
    rules = RULES
    oom = PodEvidence(
        "trainer-worker-1",
        (
            ContainerState(
                "pytorch",
                "Error",
                exit_code=1,
                finished_at=T0,
                tail=excerpt("pytorch-cuda-oom.log"),
            ),
        ),
    )
    peers = [
        PodEvidence(
            name,
            (
                ContainerState(
                    "pytorch",
                    "Error",
                    exit_code=134,
                    finished_at=T0 + datetime.timedelta(minutes=10),
                    tail=excerpt("nccl-watchdog-terminate.log"),
                ),
            ),
        )
        for name in ("trainer-master-0", "trainer-worker-0")
    ]
    classified = [pod_failure(pod, rules) for pod in [*peers, oom]]
    assert [pod.failure.failure_class for pod in classified] == [
        "NCCLError",
        "NCCLError",
        "GPUOutOfMemory",
    ]
    job = job_failure(classified)
    assert job is not None
    assert (job.pod, job.failure.failure_class, job.derived_exit_code) == (
        "trainer-worker-1",
        "GPUOutOfMemory",
        134,
    )
    assert classified[0].failure.signal == 6  # 134: SIGABRT, as std::terminate raises it


def test_a_job_controllers_verdict_comes_before_the_traceback_in_the_issues_order() -> None:
    evidence = PodEvidence(
        "trainer-0",
        (ContainerState("pytorch", "Error", exit_code=1, tail=excerpt("python-valueerror.log")),),
        events=(Reported("BackoffLimitExceeded", "Job has reached the specified backoff limit"),),
    )
    failure = classify(evidence, RULES)
    assert (failure.failure_class, failure.container, failure.exit_code) == (
        "BackoffLimitExceeded",
        "pytorch",
        1,
    )


def test_a_pod_level_class_names_the_pods_first_failed_container() -> None:
    evidence = PodEvidence(
        "trainer-0",
        (
            ContainerState(
                "sidecar", "Error", exit_code=143, finished_at=T0 + datetime.timedelta(1)
            ),
            ContainerState("pytorch", "Error", exit_code=137, finished_at=T0),
            ContainerState(
                "init", "Completed", exit_code=0, finished_at=T0 - datetime.timedelta(1)
            ),
        ),
        status=Reported("Evicted", EVICTED_FOR_MEMORY),
    )
    failure = classify(evidence, RULES)
    assert (failure.failure_class, failure.container, failure.exit_code, failure.signal) == (
        "Evicted",
        "pytorch",
        137,
        9,
    )


@pytest.mark.parametrize(
    ("code", "reported", "signal", "detail"),
    [
        (137, None, 9, "exit code 137 (SIGKILL)"),
        (143, None, 15, "exit code 143 (SIGTERM)"),
        (139, None, 11, "exit code 139 (SIGSEGV)"),
        (134, None, 6, "exit code 134 (SIGABRT)"),
        (158, None, 30, "exit code 158 (signal 30)"),
        (1, None, None, "exit code 1"),
        (255, None, None, "exit code 255"),
        (2, 9, 9, "exit code 2 (SIGKILL)"),
    ],
)
def test_an_exit_code_alone_is_an_error_with_its_signal(
    code: int, reported: int | None, signal: int | None, detail: str
) -> None:
    # 137 without the OOMKilled reason: a SIGKILL from anyone (a child's OOM, a probe).
    evidence = PodEvidence(
        "trainer-0", (ContainerState("pytorch", "Error", exit_code=code, signal=reported),)
    )
    assert classify(evidence, RULES) == Failure("Error", "pytorch", code, signal, detail)


def test_user_error_keeps_the_childs_exception_not_its_launchers() -> None:
    # torchrun prints the child's traceback, then its own ending in ChildFailedError.
    tail = excerpt("python-valueerror.log") + excerpt("torchrun-child-failed.log")
    assert classify(failed(tail), RULES).detail == (
        "ValueError: Expected input batch_size (1216) to match target batch_size (1280)"
    )


def test_user_error_reads_a_ranks_lines_behind_their_prefix() -> None:
    # PyTorch 2.2+ (and torchrun --tee) put "[rankN]:" before each line of a rank.
    tail = "".join(f"[rank3]:{line}\n" for line in excerpt("python-keyerror.log").splitlines())
    failure = classify(failed(tail), RULES)
    assert (failure.failure_class, failure.detail) == ("UserError", "KeyError: 'RANK'")


def test_user_error_takes_the_last_traceback_and_its_first_exception_line() -> None:
    chained = (
        excerpt("python-keyerror.log")
        + "\nDuring handling of the above exception, another exception occurred:\n\n"
        + excerpt("python-valueerror.log")
    )
    assert classify(failed(chained), RULES).detail == (
        "ValueError: Expected input batch_size (1216) to match target batch_size (1280)"
    )


def test_user_error_without_an_exception_line_keeps_the_matched_line() -> None:
    tail = 'epoch 3\nTraceback (most recent call last):\n  File "train.py", line 1, in <module>\n'
    failure = classify(failed(tail), RULES)
    assert (failure.failure_class, failure.detail) == (
        "UserError",
        "Traceback (most recent call last):",
    )


def test_a_detail_is_one_printable_line_within_its_bound() -> None:
    tail = (
        "\x1b[31mRuntimeError: CUDA out of memory.\x1b[0m\tTried\u202eto\x07allocate "
        + "x" * 5000
        + "\n"
    )
    detail = classify(failed(tail), RULES).detail
    assert detail is not None
    assert detail.startswith("RuntimeError: CUDA out of memory. Tried\\u202eto\\x07allocate xxx")
    assert len(detail) == scanning.DETAIL_LENGTH and detail.endswith("…")
    assert detail.isprintable()


def test_job_failure_is_the_first_failing_pods_with_the_highest_exit_code() -> None:
    def pod(name: str, at: datetime.datetime | None, code: int | None, cls: str) -> PodFailure:
        return PodFailure(name, at, code, Failure(cls, "pytorch", code))

    pods = [
        pod("worker-1", T0 + datetime.timedelta(seconds=5), 137, "Error"),
        pod("worker-0", None, 255, "Unknown"),
        pod("worker-2", T0, 1, "UserError"),
        pod("worker-3", T0, 1, "NCCLError"),
    ]
    job = job_failure(pods)
    assert job is not None
    # worker-2 and worker-3 failed at the same time: the name decides.
    assert (job.pod, job.failure.failure_class, job.derived_exit_code) == (
        "worker-2",
        "UserError",
        255,
    )
    assert job_failure([]) is None
    only_unknown = job_failure([pod("worker-0", None, None, "Unknown")])
    assert only_unknown is not None and only_unknown.derived_exit_code is None


def test_a_pods_failure_time_is_its_first_failed_containers_else_its_end() -> None:
    first = PodEvidence(
        "trainer-0",
        (
            ContainerState("b", "Error", exit_code=1, finished_at=T0 + datetime.timedelta(1)),
            ContainerState("a", "Error", exit_code=2, finished_at=T0),
            ContainerState("c", "Completed", exit_code=0, finished_at=T0 - datetime.timedelta(1)),
        ),
        ended_at=T0 + datetime.timedelta(2),
    )
    assert (pod_failure(first, RULES).failed_at, first.highest_exit_code) == (T0, 2)
    never_started = PodEvidence(
        "trainer-1", (ContainerState("pytorch", "ErrImagePull"),), ended_at=T0
    )
    assert pod_failure(never_started, RULES) == PodFailure(
        "trainer-1", T0, None, Failure("ImagePull", "pytorch", None, None, "ErrImagePull")
    )


def test_a_ten_megabyte_tail_is_read_by_its_end_only() -> None:
    oom = excerpt("pytorch-cuda-oom.log")
    many_lines = "step 1 loss 0.5\n" * 700_000 + oom
    one_line = "x" * 10_000_000 + oom.replace("\n", " ")
    blank = "\n" * 10_000_000
    started = time.monotonic()
    assert classify(failed(many_lines), RULES).failure_class == "GPUOutOfMemory"
    assert classify(failed(one_line), RULES).failure_class == "Error"
    assert classify(failed(blank), RULES).failure_class == "Error"
    # The OOM far before the end is not seen: only the end is read.
    assert classify(failed(oom + "step\n" * 2_000_000), RULES).failure_class == "Error"
    # Not a timing test: four tails of 10 MB each take a fraction of a second.
    assert time.monotonic() - started < 20
    lines = scanning.scanned(many_lines)
    assert len(lines) <= scanning.SCAN_LINES
    assert sum(len(line) for line in lines) <= scanning.SCAN_CHARS


def test_a_sites_slow_pattern_runs_on_bounded_lines() -> None:
    # Not nested, so accepted; quadratic on a long run of "a", bounded by LINE_CHARS.
    rules = rules_from({"rules": [{"class": "Slow", "tail": ["a.*a.*b"]}]})
    started = time.monotonic()
    assert classify(failed("a" * 10_000_000), rules).failure_class == UNKNOWN
    assert time.monotonic() - started < 20


def test_a_container_that_succeeded_is_not_read() -> None:
    evidence = PodEvidence(
        "trainer-0",
        (
            ContainerState("init", "Completed", exit_code=0, tail=excerpt("pytorch-cuda-oom.log")),
            ContainerState("pytorch", "Error", exit_code=1),
        ),
    )
    assert classify(evidence, RULES) == Failure("Error", "pytorch", 1, None, "exit code 1")
