"""``jobarchive job``'s "why" line (decision 42): a failed job's class first, where it
was read from, and its detail line."""

from jobarchive.cli.rendering import failure_class, why

FAILURE = {
    "class": "OOMKilled",
    "pod": "bert-worker-3",
    "container": "pytorch",
    "exit_code": 137,
    "signal": 9,
    "detail": "OOMKilled",
    "derived_exit_code": 137,
}


def test_the_why_line_says_the_class_where_it_was_read_and_its_detail() -> None:
    assert why(FAILURE) == (
        "Why: OOMKilled (pod bert-worker-3, container pytorch, exit code 137, signal 9): OOMKilled"
    )


def test_a_higher_exit_code_of_another_pod_is_said_and_what_is_unknown_left_out() -> None:
    failure = {**FAILURE, "class": "Preempted", "container": None, "exit_code": None}
    failure.update(signal=None, detail="Preempted: by kube-scheduler", derived_exit_code=1)
    assert why(failure) == (
        "Why: Preempted (pod bert-worker-3, highest exit code 1): Preempted: by kube-scheduler"
    )
    bare = {"class": "Unknown", "pod": None, "detail": None, "derived_exit_code": None}
    assert why(bare) == "Why: Unknown"


def test_the_job_tables_failure_cell_is_the_lists_class_or_the_details() -> None:
    assert failure_class({"failure_class": "NCCLError"}) == "NCCLError"
    assert failure_class({"failure": {"class": "OOMKilled"}}) == "OOMKilled"
    assert failure_class({"failure_class": None}) == failure_class({}) == ""
