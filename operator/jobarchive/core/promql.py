"""The one PromQL query that summarises pods' runs (decision 45), pure: every figure of
dcgm-exporter's and the kubelet's cAdvisor's families over a run, evaluated at its
finish, each answer tagged with the figure it is (``FIGURE``), so that a pod costs
Prometheus one request at most: the pods of one namespace that ran over the same window
(a job's workers that started and ended together) share one, each answer told apart by
its pod (``owner``).

A pod's series are matched by namespace and pod name (each pair of label names in turn:
``namespace``/``pod`` as dcgm-exporter and the kubelet write them, then
``exported_namespace``/``exported_pod`` where a ServiceMonitor relabelled them), within
the pod's run only (pod names repeat across incarnations), and by ``pod_uid`` where
dcgm-exporter exports it (a series without the label matches too). cAdvisor's series are
the containers' (not the pod-level one, ``container=""``, nor the pause container's,
``POD``).

Counters are read as their last sample less their first within the run (not
``increase``, which extrapolates): exact for a run without a counter reset, short by the
part of one scrape interval before the first sample.
"""

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

# The label each answer carries to say which figure it is.
FIGURE = "jobarchive_figure"
# dcgm-exporter's families (NVIDIA's names), per GPU.
ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
# The kubelet's cAdvisor families, per container.
CPU_SECONDS = "container_cpu_usage_seconds_total"
WORKING_SET = "container_memory_working_set_bytes"
CONTAINERS_ONLY = 'container!="",container!="POD"'
# What tells a pod's series apart: a GPU (its UUID, index, MIG instance), a container's
# cgroup (a restarted container's counter is a new series).
SERIES_LABELS = ("UUID", "gpu", "GPU_I_ID", "id")

# Each figure: its name, the function over the run, and the family it reads.
GPU_FIGURES = (
    ("active_mean", "avg_over_time", ENGINE_ACTIVE),
    ("active_peak", "max_over_time", ENGINE_ACTIVE),
    ("util_mean", "avg_over_time", GPU_UTIL),
    ("util_peak", "max_over_time", GPU_UTIL),
    ("fb_used_peak", "max_over_time", FB_USED),
    ("fb_used_mean", "avg_over_time", FB_USED),
    ("fb_free_mean", "avg_over_time", FB_FREE),
    ("energy_last", "max_over_time", ENERGY),
    ("energy_first", "min_over_time", ENERGY),
)
CPU_FIGURES = (
    ("cpu_last", "max_over_time", CPU_SECONDS),
    ("cpu_first", "min_over_time", CPU_SECONDS),
)
# The peak of the containers' summed working set, sampled every scrape interval.
MEMORY_PEAK = "memory_peak"
FIGURES = (*(f for f, _, _ in GPU_FIGURES), *(f for f, _, _ in CPU_FIGURES), MEMORY_PEAK)


@dataclasses.dataclass(frozen=True)
class Target:
    """What one query is asked of: pods of one namespace that ran over the same window
    (a job's workers that started and ended together), by name and uid, and the scrape
    interval."""

    namespace: str
    pods: Sequence[tuple[str, str]]
    run_seconds: float
    scrape_interval: float
    label_pairs: Sequence[tuple[str, str]]


def literal(value: str) -> str:
    """A PromQL string literal of ``value``."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _range(target: Target) -> str:
    """The run as a PromQL range: whole seconds, at least one scrape interval."""
    return f"{max(math.ceil(target.run_seconds), _step(target))}s"


def _step(target: Target) -> int:
    """The scrape interval in whole seconds, at least one."""
    return max(1, math.ceil(target.scrape_interval))


def _one_of(values: Sequence[str]) -> str:
    """A regular expression matching exactly these values."""
    return "|".join(re.escape(value) for value in values)


def _selector(target: Target, pair: tuple[str, str], extra: str) -> str:
    """The pods' selector by one label pair, with ``extra`` matchers; a series without
    ``pod_uid`` matches, one with another pod's does not."""
    namespace_label, pod_label = pair
    matchers = [
        f"{namespace_label}={literal(target.namespace)}",
        f"{pod_label}=~{literal(_one_of([name for name, _ in target.pods]))}",
        f"pod_uid=~{literal(_one_of([uid for _, uid in target.pods]) + '|')}",
        *([extra] if extra else []),
    ]
    return "{" + ",".join(matchers) + "}"


def _tagged(expression: str, figure: str) -> str:
    return f'label_replace({expression}, "{FIGURE}", "{figure}", "", "")'


def _kept(target: Target, expression: str) -> str:
    """``expression`` with only the labels a summary reads: whose pod it is, which GPU
    (or MIG instance), which container's series; the rest (the node, the GPU's model and
    driver, the scrape's job) would only make the answer longer."""
    labels = [name for pair in target.label_pairs for name in pair]
    return f"max by ({', '.join([*labels, *SERIES_LABELS])}) ({expression})"


def _over_time(target: Target, function: str, family: str, extra: str = "") -> str:
    """``function`` over the run of the family's series of the pods, each label pair's."""
    window = _range(target)
    return " or ".join(
        _kept(target, f"{function}({family}{_selector(target, pair, extra)}[{window}])")
        for pair in target.label_pairs
    )


def _memory_peak(target: Target) -> str:
    """Each pod's containers' summed working set at its peak, each label pair's."""
    window = f"[{_range(target)}:{_step(target)}s]"
    return " or ".join(
        f"max_over_time(sum by ({namespace_label}, {pod_label}) "
        f"({WORKING_SET}{_selector(target, (namespace_label, pod_label), CONTAINERS_ONLY)})"
        f"{window})"
        for namespace_label, pod_label in target.label_pairs
    )


def query(target: Target) -> str:
    """The one query of the pods' figures, to be evaluated at their finish."""
    parts = [
        _tagged(_over_time(target, function, family), figure)
        for figure, function, family in GPU_FIGURES
    ]
    parts += [
        _tagged(_over_time(target, function, family, CONTAINERS_ONLY), figure)
        for figure, function, family in CPU_FIGURES
    ]
    parts.append(_tagged(_memory_peak(target), MEMORY_PEAK))
    return " or ".join(f"({part})" for part in parts)


def owner(labels: Mapping[str, str], target: Target) -> str | None:
    """The pod of the target a series of the answer is of: by the first label pair that
    names one of its pods in its namespace; None for none."""
    names = {name for name, _ in target.pods}
    for namespace_label, pod_label in target.label_pairs:
        if labels.get(namespace_label) == target.namespace and labels.get(pod_label) in names:
            return labels[pod_label]
    return None
