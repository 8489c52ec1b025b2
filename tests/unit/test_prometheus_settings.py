"""The Prometheus settings: its URL (checked without ever showing it), the token and CA
files, the pod label pairs and the numbers."""

import pathlib

import pytest

from jobarchive.config import ConfigError, check_prometheus_url, load


def test_without_a_url_efficiency_is_off_and_the_defaults_hold() -> None:
    settings = load({})
    assert settings.prometheus_url is None
    assert settings.prometheus_token_file is None
    assert settings.prometheus_ca_file is None
    assert settings.prometheus_pod_labels == (
        ("namespace", "pod"),
        ("exported_namespace", "exported_pod"),
    )
    assert settings.prometheus_delay == 60
    assert settings.prometheus_scrape_interval == 30
    assert settings.prometheus_timeout == 30
    assert settings.prometheus_concurrency == 4
    assert settings.prometheus_rate == 20


def test_the_url_token_and_ca_files_are_taken() -> None:
    settings = load(
        {
            "JOBARCHIVE_PROMETHEUS_URL": " https://gateway.example:8443/prometheus/ ",
            "JOBARCHIVE_PROMETHEUS_TOKEN_FILE": "/var/run/secrets/token",
            "JOBARCHIVE_PROMETHEUS_CA_FILE": "/etc/prometheus/ca.pem",
            "JOBARCHIVE_PROMETHEUS_TIMEOUT": "5",
        }
    )
    assert settings.prometheus_url == "https://gateway.example:8443/prometheus"
    assert settings.prometheus_token_file == pathlib.Path("/var/run/secrets/token")
    assert settings.prometheus_ca_file == pathlib.Path("/etc/prometheus/ca.pem")
    assert settings.prometheus_timeout == 5


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "http://prometheus-operated.monitoring:9090",
            "http://prometheus-operated.monitoring:9090",
        ),
        ("http://127.0.0.1:9090/", "http://127.0.0.1:9090"),
        ("https://[fd00::1]/prom", "https://[fd00::1]/prom"),
    ],
)
def test_a_good_url_is_kept_without_its_trailing_slash(url: str, expected: str) -> None:
    assert check_prometheus_url(url) == expected


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("prometheus:9090", "not an http:// or https:// URL"),
        ("ftp://admin:hunter2@host/", "not an http:// or https:// URL"),
        ("http://admin:hunter2@prometheus:9090", "a user or password in the URL is refused"),
        ("https://hunter2@prometheus", "a user or password in the URL is refused"),
        ("http://prometheus:9090/?token=hunter2", "a query or fragment in the URL is refused"),
        ("http://prometheus:90900", "the port is not a number"),
        ("http://:9090", "no host"),
        ("http://[fd00::1", "not a URL"),
    ],
)
def test_a_bad_url_is_one_line_that_never_shows_it(url: str, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"JOBARCHIVE_PROMETHEUS_URL": url})
    message = str(raised.value)
    assert message.startswith(f"JOBARCHIVE_PROMETHEUS_URL: {said}")
    assert "\n" not in message
    assert "hunter2" not in message
    assert url not in message


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"JOBARCHIVE_PROMETHEUS_TOKEN_FILE": "/t"},
            "JOBARCHIVE_PROMETHEUS_TOKEN_FILE: set without JOBARCHIVE_PROMETHEUS_URL",
        ),
        (
            {"JOBARCHIVE_PROMETHEUS_CA_FILE": "/ca.pem"},
            "JOBARCHIVE_PROMETHEUS_CA_FILE: set without JOBARCHIVE_PROMETHEUS_URL",
        ),
        (
            {"JOBARCHIVE_PROMETHEUS_URL": "http://p:9090", "JOBARCHIVE_PROMETHEUS_CA_FILE": "/c"},
            "JOBARCHIVE_PROMETHEUS_CA_FILE: set for an http:// JOBARCHIVE_PROMETHEUS_URL",
        ),
        ({"JOBARCHIVE_PROMETHEUS_DELAY": "86401"}, "JOBARCHIVE_PROMETHEUS_DELAY: 86401 is outside"),
        ({"JOBARCHIVE_PROMETHEUS_RATE": "0"}, "JOBARCHIVE_PROMETHEUS_RATE: 0 is outside 1..1000"),
        ({"JOBARCHIVE_PROMETHEUS_CONCURRENCY": "x"}, "JOBARCHIVE_PROMETHEUS_CONCURRENCY: 'x' is"),
    ],
)
def test_a_misplaced_file_or_a_bad_number_is_named(env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=f"^{said}"):
        load(env)


def test_pod_label_pairs_are_tried_in_the_order_given() -> None:
    settings = load(
        {"JOBARCHIVE_PROMETHEUS_POD_LABELS": " exported_namespace/exported_pod , ns/pod_name"}
    )
    assert settings.prometheus_pod_labels == (
        ("exported_namespace", "exported_pod"),
        ("ns", "pod_name"),
    )


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("namespace", "'namespace' is not two label names"),
        ("namespace/pod/container", "'namespace/pod/container' is not two label names"),
        ("namespace/pod,", "'' is not two label names"),
        ("k8s-namespace/pod", "'k8s-namespace/pod' is not two label names"),
        ("__name__/pod", "'__name__/pod' is not two label names"),
        ("pod/pod", "'pod/pod' is not two label names"),
        ("namespace/pod,namespace/pod", "'namespace/pod' is given twice"),
        # Prometheus 2.42 answers 400 bad_data to ``max by (namespace, without)``.
        ("namespace/without", "'namespace/without' names a label PromQL cannot group by"),
        ("Inf/pod", "'Inf/pod' names a label PromQL cannot group by"),
        ("namespace/pod,ns/NaN", "'ns/NaN' names a label PromQL cannot group by"),
    ],
)
def test_a_bad_pod_label_pair_is_named(raw: str, shown: str) -> None:
    with pytest.raises(ConfigError, match=f"^JOBARCHIVE_PROMETHEUS_POD_LABELS: {shown}"):
        load({"JOBARCHIVE_PROMETHEUS_POD_LABELS": raw})
