"""How ``make bench`` prints: a figure per line, and a ratio beside its target."""

import argparse
import dataclasses

from testbed.mariadb import Databases


@dataclasses.dataclass(frozen=True)
class Run:
    """What every section of a run is given: the run's databases, its arguments and the
    private server's process (None on an external server)."""

    databases: Databases
    args: argparse.Namespace
    server_pid: int | None


def line(label: str, value: str, note: str = "") -> None:
    """One figure, its label left and its value right, then a note."""
    print(f"  {label:<44} {value:>14}  {note}".rstrip(), flush=True)


def ratio(label: str, value: float, target: float, higher_is_better: bool = True) -> bool:
    """One figure beside its target; whether it met it."""
    met = value >= target if higher_is_better else value <= target
    sign = ">=" if higher_is_better else "<="
    line(label, f"{value:.2f}", f"target {sign} {target}: {'met' if met else 'MISSED'}")
    return met
