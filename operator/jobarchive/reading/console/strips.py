"""A job's per-GPU activity strip (decision 45) as geometry (pure): a row per pod
(the efficiency's first pods), a cell per GPU shaded by its mean activity, each with
the title a pointer shows. Shades are classes, not colours: the console's stylesheet
draws them (its Content-Security-Policy allows no inline style)."""

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.reading.console.formats import percent

# Rows drawn at most: a strip, not a table; the efficiency's JSON lists the rest.
ROWS = 32
CELL = 14
GAP = 2
LABEL_WIDTH = 220
# Mean activity's shades, from never used to busy: the class of each bound's cell.
SHADES = ((0.0, "gpu-unused"), (0.25, "gpu-low"), (0.5, "gpu-some"), (0.75, "gpu-busy"))
TOP = "gpu-full"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One GPU of a pod: where it is drawn, its shade and its title."""

    x: int
    y: int
    shade: str
    title: str


@dataclasses.dataclass(frozen=True)
class Strip:
    """Every row's label and cells, and the drawing's size."""

    labels: list[tuple[int, str]]
    cells: list[Cell]
    width: int
    height: int


def shade(mean: float | None, peak: float | None) -> str:
    """A GPU's class: never used (a peak of zero), else by its mean activity."""
    if mean is None:
        return "gpu-unknown"
    if peak is not None and peak <= 0.0:
        return "gpu-unused"
    return next((name for bound, name in SHADES[1:] if mean < bound), TOP)


def strip(efficiency: Mapping[str, Any]) -> Strip:
    """The strip of a job's efficiency (``queries.measured``'s JSON)."""
    pods: Sequence[Mapping[str, Any]] = [
        pod for pod in efficiency["per_pod"] if pod.get("per_gpu")
    ][:ROWS]
    labels, cells = [], []
    widest = 0
    for row, pod in enumerate(pods):
        y = row * (CELL + GAP)
        labels.append((y + CELL - 2, str(pod["name"])))
        for column, gpu in enumerate(pod["per_gpu"]):
            x = LABEL_WIDTH + column * (CELL + GAP)
            widest = max(widest, x + CELL)
            title = (
                f"{pod['name']} GPU {gpu['gpu']}: mean {percent(gpu['mean'])}, "
                f"peak {percent(gpu['peak'])}, memory peak {percent(gpu['memory_peak'])}"
            )
            cells.append(Cell(x, y, shade(gpu["mean"], gpu["peak"]), title))
    return Strip(labels, cells, max(widest, LABEL_WIDTH), len(pods) * (CELL + GAP))
