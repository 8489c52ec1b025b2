"""The failure taxonomy (decision 42): every failed pod gets one class from an ordered
table of rules over its evidence, and every failed job its first failing pod's.

A pod's evidence is what is known of it when it has failed: its containers' ends (or
waits), its status's reason and message, its DisruptionTarget condition, its Events, and
the Kueue attempt it ran in. The rules are data: ``taxonomy.yaml`` beside this module,
parsed by ``ruletable.rules_from`` (the file is read by ``jobarchive.infra.rules``). The
first rule any of whose matchers matches gives the class and the detail line, and so
order decides: an OOMKilled container whose tail also shows NCCL errors is OOMKilled.
No rule matching gives ``Unknown``. Pure: no I/O.
"""

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Sequence

from jobarchive.core.ruletable import Rule
from jobarchive.core.scanning import detail_line, last_exception, last_match, scanned

UNKNOWN = "Unknown"
# Linux's signals as a shell reports them in an exit code (128 + the signal's number).
SIGNALS = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    11: "SIGSEGV",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
}
# The highest signal number an exit code above 128 is read as (Linux's SIGRTMAX).
_HIGHEST_SIGNAL = 64
OOM_KILLED = "OOMKilled"


@dataclasses.dataclass(frozen=True)
class ContainerState:
    """A container instance's end, or its wait when it never started: a terminated one
    has an exit code, a waiting one (``ErrImagePull``, ``CreateContainerConfigError``)
    none. ``message`` is its termination message, ``tail`` its log's last lines."""

    name: str
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    finished_at: datetime.datetime | None = None
    tail: str | None = None

    @property
    def failed(self) -> bool:
        """Terminated with a non-zero exit code, or killed for its memory."""
        return self.exit_code is not None and (self.exit_code != 0 or self.reason == OOM_KILLED)

    @property
    def signal_number(self) -> int | None:
        """The signal that ended it: as reported, else read from an exit code above 128."""
        if self.signal is not None:
            return self.signal
        if self.exit_code is not None and 128 < self.exit_code <= 128 + _HIGHEST_SIGNAL:
            return self.exit_code - 128
        return None


@dataclasses.dataclass(frozen=True)
class Reported:
    """A reason and a message, as Kubernetes reports them: a pod's status, a condition,
    an Event."""

    reason: str
    message: str = ""


@dataclasses.dataclass(frozen=True)
class KueueEviction:
    """Why Kueue evicted the attempt: its Evicted condition's reason (``Preempted``,
    ``PodsReadyTimeout``, ``NodeFailures``...), underlying cause and message."""

    reason: str
    underlying_cause: str | None = None
    message: str | None = None


@dataclasses.dataclass(frozen=True)
class PodEvidence:
    """What is known of a failed pod. ``containers`` in any order; ``events`` oldest
    first (its job's too, where the caller adds them); ``disruption`` its
    DisruptionTarget condition; ``ended_at`` when it ended, for a pod none of whose
    containers ended."""

    pod: str
    containers: tuple[ContainerState, ...] = ()
    status: Reported | None = None
    disruption: Reported | None = None
    events: tuple[Reported, ...] = ()
    kueue: KueueEviction | None = None
    ended_at: datetime.datetime | None = None

    def failed_containers(self) -> list[ContainerState]:
        """The failed containers, first failed first (by finish time, unknown last)."""
        failed = [container for container in self.containers if container.failed]
        return sorted(failed, key=lambda container: _time_key(container.finished_at))

    @property
    def failed_at(self) -> datetime.datetime | None:
        """When its first container failed; else when it ended, if known."""
        failed = self.failed_containers()
        if failed and failed[0].finished_at is not None:
            return failed[0].finished_at
        return self.ended_at

    @property
    def highest_exit_code(self) -> int | None:
        """The highest exit code of its terminated containers."""
        codes = [c.exit_code for c in self.containers if c.exit_code is not None]
        return max(codes, default=None)


@dataclasses.dataclass(frozen=True)
class Failure:
    """A pod's class, with the container it was read from (else its first failed one),
    that container's exit code and signal, and one printable detail line."""

    failure_class: str
    container: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    detail: str | None = None


@dataclasses.dataclass(frozen=True)
class PodFailure:
    """A classified pod as a job's failure is chosen from: when it failed, its highest
    exit code, its failure."""

    pod: str
    failed_at: datetime.datetime | None
    exit_code: int | None
    failure: Failure


@dataclasses.dataclass(frozen=True)
class JobFailure:
    """A job's failure: its first failing pod's, and the highest exit code of its pods."""

    pod: str
    failure: Failure
    derived_exit_code: int | None


@dataclasses.dataclass(frozen=True)
class _Found:
    """What a matcher found: the container it was in (if any) and the detail it gives."""

    container: ContainerState | None
    detail: str | None


_Matcher = Callable[[Rule, PodEvidence, Sequence[ContainerState]], _Found | None]


def classify(evidence: PodEvidence, rules: Sequence[Rule]) -> Failure:
    """The pod's failure by the first rule that matches its evidence, else Unknown."""
    ordered = _examined(evidence)
    first = next((container for container in ordered if container.failed), None)
    for rule in rules:
        found = _match(rule, evidence, ordered)
        if found is not None:
            return _failure(rule.failure_class, found.container or first, found.detail)
    status = evidence.status
    return _failure(UNKNOWN, first, _said(status.reason, status.message) if status else None)


def pod_failure(evidence: PodEvidence, rules: Sequence[Rule]) -> PodFailure:
    """The pod classified, with what ``job_failure`` chooses by."""
    return PodFailure(
        evidence.pod, evidence.failed_at, evidence.highest_exit_code, classify(evidence, rules)
    )


def job_failure(pods: Iterable[PodFailure]) -> JobFailure | None:
    """The job's failure: its first failing pod's (by the time its first container
    failed; pods without a time after those with one, then by name), with the highest
    exit code of all its pods. None for no pods."""
    classified = list(pods)
    if not classified:
        return None
    first = min(classified, key=lambda pod: (_time_key(pod.failed_at), pod.pod))
    codes = [pod.exit_code for pod in classified if pod.exit_code is not None]
    return JobFailure(first.pod, first.failure, max(codes, default=None))


def _time_key(moment: datetime.datetime | None) -> tuple[bool, datetime.datetime]:
    """Sorts known times first, earliest first."""
    return (moment is None, moment or datetime.datetime.min.replace(tzinfo=datetime.UTC))


def _examined(evidence: PodEvidence) -> list[ContainerState]:
    """The containers in the order matchers look at them: failed ones first failed
    first, then the others (waiting ones) as given."""
    failed = evidence.failed_containers()
    return failed + [container for container in evidence.containers if not container.failed]


def _failure(failure_class: str, container: ContainerState | None, detail: str | None) -> Failure:
    if container is None:
        return Failure(failure_class, detail=detail_line(detail))
    return Failure(
        failure_class,
        container.name,
        container.exit_code,
        container.signal_number,
        detail_line(detail),
    )


def _match(rule: Rule, evidence: PodEvidence, ordered: Sequence[ContainerState]) -> _Found | None:
    """What the rule's first matching matcher found, in a fixed order of matchers."""
    for matcher in _MATCHERS:
        found = matcher(rule, evidence, ordered)
        if found is not None:
            return found
    return None


def _by_container_reason(
    rule: Rule, _evidence: PodEvidence, ordered: Sequence[ContainerState]
) -> _Found | None:
    for container in ordered:
        if container.reason is not None and container.reason in rule.container_reasons:
            return _Found(container, _said(container.reason, container.message))
    return None


def _by_exit_code(
    rule: Rule, _evidence: PodEvidence, ordered: Sequence[ContainerState]
) -> _Found | None:
    for container in ordered:
        code = container.exit_code
        if code is not None and (code in rule.exit_codes or (rule.any_nonzero and code != 0)):
            return _Found(container, _exit_detail(container))
    return None


def _by_pod_status(rule: Rule, evidence: PodEvidence, _ordered: object) -> _Found | None:
    status = evidence.status
    if status is None:
        return None
    if status.reason in rule.pod_reasons or any(
        pattern.search(status.message) for pattern in rule.pod_messages
    ):
        return _Found(None, _said(status.reason, status.message))
    return None


def _by_disruption(rule: Rule, evidence: PodEvidence, _ordered: object) -> _Found | None:
    disruption = evidence.disruption
    if disruption is not None and disruption.reason in rule.disruptions:
        return _Found(None, _said(disruption.reason, disruption.message))
    return None


def _by_event(rule: Rule, evidence: PodEvidence, _ordered: object) -> _Found | None:
    for event in reversed(evidence.events):
        if event.reason in rule.event_reasons or any(
            pattern.search(event.message) for pattern in rule.event_messages
        ):
            return _Found(None, _said(event.reason, event.message))
    return None


def _by_kueue(rule: Rule, evidence: PodEvidence, _ordered: object) -> _Found | None:
    eviction = evidence.kueue
    if eviction is None or not (eviction.reason in rule.kueue_reasons or "*" in rule.kueue_reasons):
        return None
    cause = f" ({eviction.underlying_cause})" if eviction.underlying_cause else ""
    return _Found(None, _said(f"Kueue {eviction.reason}{cause}", eviction.message))


def _by_tail(
    rule: Rule, _evidence: PodEvidence, ordered: Sequence[ContainerState]
) -> _Found | None:
    if not rule.tail:
        return None
    for container in ordered:
        if container.exit_code == 0 and not container.failed:
            continue  # what a container that succeeded printed did not end the pod
        lines = scanned(container.tail)
        line = last_match(lines, rule.tail)
        if line is None:
            continue
        if rule.traceback:
            return _Found(container, last_exception(lines, rule.wrappers) or line)
        return _Found(container, line)
    return None


_MATCHERS: tuple[_Matcher, ...] = (
    _by_container_reason,
    _by_exit_code,
    _by_pod_status,
    _by_disruption,
    _by_event,
    _by_kueue,
    _by_tail,
)


def _said(reason: str, message: str | None) -> str:
    """``reason: message``, or the reason alone."""
    return f"{reason}: {message}" if message else reason


def _exit_detail(container: ContainerState) -> str:
    """``exit code 137 (SIGKILL)``, with the termination message when there is one."""
    signal = container.signal_number
    named = f" ({SIGNALS.get(signal, f'signal {signal}')})" if signal is not None else ""
    return _said(f"exit code {container.exit_code}{named}", container.message)
