"""A stand-in for Prometheus that the demo runs, so that efficiency shows without a GPU
and without installing Prometheus (the tests use the real one): it answers
``/api/v1/query`` for its own series, in dcgm-exporter's and cAdvisor's metric names
and labels, as Prometheus would answer the operator's query (``core.promql``).

It evaluates only what that query is made of: ``label_replace`` of ``avg_over_time``,
``max_over_time`` or ``min_over_time`` over a series selector and a range, joined by
``or``, and the peak of a sum as a subquery. Its series are steady: a gauge holds its
value over any range; a counter grows at its rate, so over a range of D seconds its
last sample less its first is rate x D.
"""

import dataclasses
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

# A figure of the query: label_replace(<expression>, "<label>", "<figure>", "", "").
_TAGGED = re.compile(r'label_replace\((?P<expr>.*?), "(?P<label>\w+)", "(?P<figure>\w+)", "", ""\)')
_OVER_TIME = re.compile(
    r"(?P<fn>\w+_over_time)\((?P<metric>\w+)\{(?P<matchers>[^}]*)\}\[(?P<range>\d+)s\]\)"
)
_PEAK_OF_SUM = re.compile(
    r"max_over_time\(sum by \((?P<by>[\w, ]+)\) \((?P<inner>[^()]*)\)\[(?P<range>\d+)s:\d+s\]\)"
)
_SELECTOR = re.compile(r"(?P<metric>\w+)\{(?P<matchers>[^}]*)\}")
_MATCHER = re.compile(r'(?P<name>\w+)(?P<op>=~|!=|=)"(?P<value>(?:[^"\\]|\\.)*)"')


@dataclasses.dataclass(frozen=True)
class Series:
    """One steady series: a gauge's value, or a counter's value at the range's start
    and its rate a second."""

    metric: str
    labels: Mapping[str, str]
    value: float
    rate: float = 0.0


def _matches(series: Series, matchers: str) -> bool:
    for found in _MATCHER.finditer(matchers):
        name, op, value = found["name"], found["op"], found["value"].replace("\\\\", "\\")
        have = series.labels.get(name, "")
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "=~" and not re.fullmatch(value, have):
            return False
    return True


def _selected(series: Sequence[Series], metric: str, matchers: str) -> list[Series]:
    return [s for s in series if s.metric == metric and _matches(s, matchers)]


def _over_time(function: str, series: Series, seconds: int) -> float:
    if function == "max_over_time":
        return series.value + series.rate * seconds
    if function == "avg_over_time":
        return series.value + series.rate * seconds / 2
    return series.value


def evaluate(series: Sequence[Series], query: str) -> list[dict[str, Any]]:
    """The vector the query gives over these series, as Prometheus' JSON has it."""
    result = []
    for tagged in _TAGGED.finditer(query):
        tag: dict[str, str] = {tagged["label"]: tagged["figure"]}
        expression = tagged["expr"]
        peaks = list(_PEAK_OF_SUM.finditer(expression))
        for peak in peaks:
            result += _peak_of_sum(series, peak, tag)
        if peaks:
            continue
        for term in _OVER_TIME.finditer(expression):
            for found in _selected(series, term["metric"], term["matchers"]):
                value = _over_time(term["fn"], found, int(term["range"]))
                labels = dict(found.labels) | tag
                result.append({"metric": labels, "value": [0, repr(value)]})
    return result


def _peak_of_sum(
    series: Sequence[Series], peak: re.Match[str], tag: dict[str, str]
) -> list[dict[str, Any]]:
    """A subquery's peak of the selected series summed by its labels."""
    by = [name.strip() for name in peak["by"].split(",")]
    sums: dict[tuple[str, ...], float] = {}
    for selector in _SELECTOR.finditer(peak["inner"]):
        for found in _selected(series, selector["metric"], selector["matchers"]):
            key = tuple(found.labels.get(name, "") for name in by)
            value = _over_time("max_over_time", found, int(peak["range"]))
            sums[key] = sums.get(key, 0.0) + value
    return [
        {"metric": {**dict(zip(by, key, strict=True)), **tag}, "value": [0, repr(total)]}
        for key, total in sums.items()
    ]


def app(series: Sequence[Series]) -> web.Application:
    """The stand-in's HTTP API: ``/api/v1/query`` by GET or POST."""

    async def query(request: web.Request) -> web.Response:
        form = await request.post() if request.method == "POST" else request.query
        text = str(form.get("query", ""))
        answer = evaluate(series, text)
        at = float(str(form.get("time", "0")) or 0)
        for element in answer:
            element["value"][0] = at
        return web.json_response(
            {"status": "success", "data": {"resultType": "vector", "result": answer}}
        )

    application = web.Application()
    application.router.add_route("GET", "/api/v1/query", query)
    application.router.add_route("POST", "/api/v1/query", query)
    return application


def gpu(namespace: str, pod: str, index: int, node: str) -> dict[str, str]:
    """dcgm-exporter's labels of one whole GPU attributed to a pod."""
    return {
        "gpu": str(index),
        "UUID": "GPU-" + hashlib.sha256(f"{namespace}/{pod}/{index}".encode()).hexdigest()[:12],
        "device": f"nvidia{index}",
        "modelName": "NVIDIA A100-SXM4-80GB",
        "Hostname": node,
        "container": "pytorch",
        "namespace": namespace,
        "pod": pod,
    }


def pod_series(
    namespace: str, pod: str, node: str, activity: Sequence[float], cpu_cores: float, memory: float
) -> list[Series]:
    """A pod's series: each GPU at its activity (0: never used), its memory use, its
    power; its container's CPU at ``cpu_cores`` busy and its working set."""
    found = []
    for index, active in enumerate(activity):
        labels = gpu(namespace, pod, index, node)
        found += [
            Series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, active),
            Series("DCGM_FI_DEV_GPU_UTIL", labels, round(active * 100)),
            Series("DCGM_FI_DEV_FB_USED", labels, 60_000 * active + 500),
            Series("DCGM_FI_DEV_FB_FREE", labels, 81_920 - 60_000 * active - 500),
            # Millijoules: 400 W busy, 60 W idle.
            Series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, 1e9, (60 + 340 * active) * 1000),
        ]
    container = {
        "container": "pytorch",
        "namespace": namespace,
        "pod": pod,
        "cpu": "total",
        "id": f"/kubepods/{pod}",
    }
    found += [
        Series("container_cpu_usage_seconds_total", container, 1000.0, cpu_cores),
        Series("container_memory_working_set_bytes", container, memory),
        # The pod-level and pause container's series, which the query leaves out.
        Series("container_memory_working_set_bytes", {**container, "container": ""}, memory * 2),
        Series("container_memory_working_set_bytes", {**container, "container": "POD"}, 1e6),
    ]
    return found


GIB = 2**30


def demo_series() -> list[Series]:
    """The demo's jobs as Prometheus saw them: ``research/mnist-ddp`` used its GPUs well,
    ``nlp/llama-sft`` left half of each pod's eight idle, ``nlp/bert-finetune`` has no
    series (its exporters were not scraped): one of each the efficiency report tells."""
    found: list[Series] = []
    for node, pod in enumerate(("mnist-ddp-master-0", "mnist-ddp-worker-0"), start=11):
        found += pod_series("research", pod, f"gpu-node-{node}", [0.92], 3.1, 10 * GIB)
    half_idle = [0.55] * 4 + [0.0] * 4
    for node, pod in enumerate(("llama-sft-master-0", "llama-sft-worker-0"), start=11):
        found += pod_series("nlp", pod, f"gpu-node-{node}", half_idle, 6.0, 40 * GIB)
    return found
