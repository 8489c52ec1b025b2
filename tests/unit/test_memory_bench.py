"""The memory bench's account of a run that ends before catching up (a watch Kopf ended
by a page answered 410, say): a figure said with how and when it ended and how far it
got, never a crash, a division by a missing figure or a failed prediction check."""

import logging
import pathlib
import sys

import pytest

from bench.e2e_bench import MIB
from bench.memory_bench import (
    ENDED,
    PAGED,
    UNPAGED,
    Plan,
    Run,
    Watch,
    predictions_close,
    report,
    slopes,
)
from jobarchive.bindings import KOPF_LOGGER, EndedWatches
from testbed.operator import OperatorProcess


class Lines:
    """The bench's ``line``, kept: label, value, note."""

    def __init__(self) -> None:
        self.kept: list[tuple[str, str, str]] = []

    def __call__(self, label: str, value: str, note: str = "") -> None:
        self.kept.append((label.strip(), value, note))

    def of(self, label: str) -> tuple[str, str]:
        return next((value, note) for kept, value, note in self.kept if kept == label)


class Gone(Exception):
    """An API error as Kopf's carry it: the HTTP status, the server's message first."""

    status = 410


class Exited(OperatorProcess):
    """An operator process that has exited, its log already written."""

    @property
    def running(self) -> bool:
        return False


def caught_up(label: str, objects: int, peak_mib: int) -> Run:
    return Run(label, objects, 60.0, 30.0, peak_mib * MIB, peak_mib * MIB, reached=objects)


def early(label: str, objects: int, peak_mib: int, reached: int) -> Run:
    ended = "watch of events.v1 in all namespaces ended (HTTP 410: too old)"
    counted = "committed" if label.startswith("jobarchive") else "seen"
    return Run(label, objects, 312.0, 250.0, peak_mib * MIB, None, None, ended, reached, counted)


def test_the_bench_reads_the_line_jobarchive_logs_for_a_watch_kopf_ended(
    caplog: pytest.LogCaptureFixture,
) -> None:
    try:
        raise Gone("too old", {"code": 410})
    except Gone:
        record = logging.LogRecord(
            "kopf", logging.ERROR, __file__, 1, "Watcher for %s has failed: %s", None, None
        )
        record.args = ("events.v1@none", "too old")
        record.exc_info = sys.exc_info()
    with caplog.at_level(logging.ERROR):
        EndedWatches().emit(record)
    found = ENDED.search(caplog.text)
    assert found is not None
    assert (found["watch"], found["cause"]) == ("events.v1 in all namespaces", "HTTP 410: too old")
    assert KOPF_LOGGER == "kopf"


def test_a_run_whose_watch_ended_is_said_with_the_objects_seen_by_then(
    tmp_path: pathlib.Path,
) -> None:
    process = Exited(tmp_path, tmp_path / "kubeconfig", {})
    process.log_path.write_text(
        "seen: 10000 objects\nseen: 20000 objects\n"
        "Kopf's watch of events.v1 in all namespaces ended (HTTP 410: too old): Kopf 1.45\n"
    )
    run = Run(PAGED, 40_000)
    watch = Watch(process, run, 0.0)
    assert watch.poll() == "watch of events.v1 in all namespaces ended (HTTP 410: too old)"
    assert run.reached == 20_000 and not watch.caught_up


def test_a_process_that_exited_before_catching_up_is_said_so(tmp_path: pathlib.Path) -> None:
    process = Exited(tmp_path, tmp_path / "kubeconfig", {})
    process.log_path.write_text("seen: 10000 objects\n")
    assert Watch(process, Run(PAGED, 40_000), 0.0).poll() == "its process exited (code None)"


def test_ratios_say_which_side_ended_early_and_never_divide_by_a_missing_peak() -> None:
    ours = caught_up("jobarchive", 200_011, 430)
    paged = early(PAGED, 200_011, 860, 150_000)
    shard = early("jobarchive, a shard of 5 namespaces", 100_005, 0, 0)
    lines = Lines()
    report(100_000, Plan(), [paged, ours, shard], lines)
    assert lines.of("peak jobarchive / paged no-op") == (
        "0.50",
        f"{PAGED} ended early: peak at the end of its run",
    )
    assert lines.of(UNPAGED)[0] == "left out"
    assert lines.of("objects seen by its end") == (
        "150,000",
        "of 200,011, by its last progress line",
    )
    assert lines.of("objects committed by its end") == ("0", "of 100,005")
    assert any("ENDED EARLY after 312 s: watch of events.v1" in note for *_, note in lines.kept)
    lines = Lines()
    report(20_000, Plan(), [caught_up(UNPAGED, 40_011, 1900), paged, shard, ours], lines)
    assert lines.of("peak paged no-op / Kopf's default no-op")[1].startswith(PAGED)
    lines = Lines()
    report(20_000, Plan(), [caught_up(UNPAGED, 40_011, 1900), paged, ours], lines)
    assert lines.of("peak jobarchive / Kopf's default no-op") == ("0.23", "")


def test_growth_is_left_out_for_a_run_that_ended_early_at_either_size() -> None:
    lines = Lines()
    small = [caught_up(PAGED, 40_011, 200), caught_up("jobarchive", 40_011, 210)]
    large = [early(PAGED, 200_011, 860, 150_000), caught_up("jobarchive", 200_011, 430)]
    slopes([(20_000, small), (100_000, large)], lines)
    assert lines.of(f"{PAGED}: peak / steady") == ("none", "ended early at one of the sizes")
    assert lines.of("jobarchive: peak / steady")[0] == "1.4 / 1.4"


def test_only_the_predictions_of_runs_that_caught_up_are_checked() -> None:
    done = caught_up("jobarchive", 200_011, 430)
    done.predicted = 431 * MIB
    ended = early("jobarchive, a shard of 5 namespaces", 100_005, 100, 20_000)
    ended.predicted = 440 * MIB
    assert predictions_close([done, ended])
    done.predicted = 300 * MIB
    assert not predictions_close([done, ended])


def test_a_watch_that_ends_after_the_catch_up_leaves_it_caught_up(tmp_path: pathlib.Path) -> None:
    process = Exited(tmp_path, tmp_path / "kubeconfig", {})
    process.log_path.write_text(
        "caught up: 40000 objects\n"
        "Kopf's watch of pods.v1 in all namespaces ended (HTTP 410: too old): Kopf 1.45\n"
    )
    watch = Watch(process, Run(PAGED, 40_000), 0.0)
    assert watch.poll() is None and watch.caught_up
