"""The one PromQL query that summarises a pod's run (decision 45), pure: every figure of
dcgm-exporter's and the kubelet's cAdvisor's families over the pod's run, evaluated at
its finish, each answer tagged with the figure it is (``FIGURE``), so that a pod costs
Prometheus one request.

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
from collections.abc import Sequence

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
    """What a pod's query is asked of: whose series, over which run, at what scrape
    interval."""

    namespace: str
    pod: str
    uid: str
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


def _selectors(target: Target, extra: str) -> list[str]:
    """The pod's selectors, one per label pair, with ``extra`` matchers."""
    uid = f"pod_uid=~{literal(re.escape(target.uid) + '|')}"
    found = []
    for namespace_label, pod_label in target.label_pairs:
        matchers = [
            f"{namespace_label}={literal(target.namespace)}",
            f"{pod_label}={literal(target.pod)}",
            uid,
            *([extra] if extra else []),
        ]
        found.append("{" + ",".join(matchers) + "}")
    return found


def _tagged(expression: str, figure: str) -> str:
    return f'label_replace({expression}, "{FIGURE}", "{figure}", "", "")'


def _over_time(target: Target, function: str, family: str, extra: str = "") -> str:
    """``function`` over the run of the family's series of the pod, each label pair's."""
    window = _range(target)
    return " or ".join(
        f"{function}({family}{selector}[{window}])" for selector in _selectors(target, extra)
    )


def query(target: Target) -> str:
    """The one query of a pod's figures, to be evaluated at the pod's finish."""
    parts = [
        _tagged(_over_time(target, function, family), figure)
        for figure, function, family in GPU_FIGURES
    ]
    parts += [
        _tagged(_over_time(target, function, family, CONTAINERS_ONLY), figure)
        for figure, function, family in CPU_FIGURES
    ]
    containers = " or ".join(
        f"{WORKING_SET}{selector}" for selector in _selectors(target, CONTAINERS_ONLY)
    )
    peak = f"max_over_time(sum({containers})[{_range(target)}:{_step(target)}s])"
    parts.append(_tagged(peak, MEMORY_PEAK))
    return " or ".join(f"({part})" for part in parts)
