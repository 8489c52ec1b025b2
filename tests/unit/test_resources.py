from jobarchive.recording.convert.resources import effective_resources, pod_resources


def container(
    name: str, requests: dict[str, object] | None = None, **kw: object
) -> dict[str, object]:
    resources: dict[str, object] = {}
    if requests is not None:
        resources["requests"] = requests
    if "limits" in kw:
        resources["limits"] = kw.pop("limits")
    return {"name": name, "image": "img", "resources": resources, **kw}


def test_requests_of_containers_add_up() -> None:
    spec = {
        "containers": [container("a", {"cpu": "500m", "memory": "1Gi"}), container("b", {"cpu": 1})]
    }
    assert effective_resources(spec) == {
        "requests": {"cpu": "1500m", "memory": "1Gi"},
        "limits": {},
    }


def test_a_request_defaults_to_the_limit_as_the_api_server_does() -> None:
    spec = {"containers": [container("a", limits={"nvidia.com/gpu": 2, "cpu": "4"})]}
    assert effective_resources(spec) == {
        "requests": {"cpu": "4", "nvidia.com/gpu": "2"},
        "limits": {"cpu": "4", "nvidia.com/gpu": "2"},
    }


def test_the_largest_init_container_wins_over_a_smaller_sum() -> None:
    spec = {
        "initContainers": [container("init", {"cpu": "2", "memory": "512Mi"})],
        "containers": [container("main", {"cpu": "1", "memory": "2Gi"})],
    }
    assert effective_resources(spec)["requests"] == {"cpu": "2", "memory": "2Gi"}


def test_sidecars_run_beside_the_containers_and_after_them_the_init_containers() -> None:
    spec = {
        "initContainers": [
            container("proxy", {"cpu": "100m"}, restartPolicy="Always"),
            container("migrate", {"cpu": "2"}),
        ],
        "containers": [container("main", {"cpu": "1"})],
    }
    assert effective_resources(spec)["requests"] == {"cpu": "2100m"}


def test_pod_level_resources_win_for_what_they_name() -> None:
    spec = {
        "resources": {"requests": {"cpu": "8"}},
        "containers": [container("main", {"cpu": "1", "memory": "1Gi"})],
    }
    assert effective_resources(spec)["requests"] == {"cpu": "8", "memory": "1Gi"}


def test_the_runtime_class_overhead_is_added_to_the_larger_of_containers_and_init() -> None:
    spec = {
        "overhead": {"cpu": "250m", "memory": "120Mi"},
        "initContainers": [container("init", {"cpu": "3"})],
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}},
            container("b", {"cpu": "1", "memory": "1Gi"}),
        ],
    }
    found = effective_resources(spec)
    # Requests: max(1 + 1, 3) + 0.25 CPU; 1Gi + 120Mi. Limits: only the CPU a pod limits.
    assert found["requests"] == {"cpu": "3250m", "memory": "1144Mi"}
    assert found["limits"] == {"cpu": "2250m"}
    counted = pod_resources(spec, frozenset())[1]
    assert (counted.cpu_millis, counted.memory_bytes) == (3250, 1144 * 2**20)
    assert pod_resources({**spec, "overhead": None}, frozenset())[1].cpu_millis == 3000


def test_garbage_amounts_and_shapes_are_ignored() -> None:
    spec = {
        "containers": [
            container("a", {"cpu": "lots", "memory": None, "nvidia.com/gpu": 1}),
            "not a container",
            {"name": "b", "resources": None},
            {"name": "c", "resources": {"requests": ["cpu"]}},
        ],
        "initContainers": None,
    }
    assert effective_resources(spec) == {"requests": {"nvidia.com/gpu": "1"}, "limits": {}}


def test_an_empty_spec_has_no_resources() -> None:
    assert effective_resources({}) == {"requests": {}, "limits": {}}
