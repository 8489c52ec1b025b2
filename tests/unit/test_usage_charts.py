"""The usage page's charts of failure classes and of preemptions per cluster queue,
from roll-up rows (pure): ranked by GPU-hours, empty rows left out."""

from jobarchive.reading.console import usage_charts


def test_failure_classes_are_ranked_by_their_failed_jobs_gpu_hours() -> None:
    rows = [
        {"failure": "Unclassified", "failed_gpu_hours": 2.0, "jobs": 1},
        {"failure": "OOMKilled", "failed_gpu_hours": 15.333, "jobs": 2},
        {"failure": "ImagePullError", "failed_gpu_hours": 0.0, "jobs": 4},
    ]
    chart = usage_charts.failure_classes(rows)
    assert [(bar.label, bar.value) for bar in chart.bars] == [
        ("OOMKilled", "15.3 GPU-h, 2 jobs"),
        ("Unclassified", "2 GPU-h, 1 job"),
    ]
    assert chart.bars[0].width > chart.bars[1].width


def test_preempted_gpu_hours_per_cluster_queue_the_most_first() -> None:
    rows = [
        {"clusterqueue": "gpu-a", "preempted_gpu_hours": 10.0},
        {"clusterqueue": "gpu-b", "preempted_gpu_hours": 0.0},
        {"clusterqueue": "gpu-c", "preempted_gpu_hours": 18.0},
    ]
    chart = usage_charts.preempted_queues(rows)
    assert [(bar.label, bar.value) for bar in chart.bars] == [
        ("gpu-c", "18 GPU-h"),
        ("gpu-a", "10 GPU-h"),
    ]
    assert usage_charts.preempted_queues([]).bars == []
