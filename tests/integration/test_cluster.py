"""The pre-flight check and the API helpers against kmock's emulated API server: what
the operator asks before Kopf starts, and how an error status reaches the caller."""

import pathlib

import pytest
from kmock._internal.rendering import Response
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.infra import cluster as kube
from jobarchive.infra import identity
from jobarchive.maintenance.peering import Peering, is_active
from testbed.cluster import Cluster
from testbed.operator import write_kubeconfig


@pytest.fixture
def kubeconfig(
    cluster: Cluster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> pathlib.Path:
    """A kubeconfig for the emulated cluster, and no in-cluster service account."""
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return path


def gets(cluster: Cluster) -> list[str]:
    return [request.url.path for request in cluster.emulator if request.method == "GET"]


async def test_a_server_that_answers_passes_with_one_request(
    cluster: Cluster, kubeconfig: pathlib.Path
) -> None:
    await kube.preflight()
    assert gets(cluster) == ["/api"]


async def test_a_server_that_refuses_the_credentials_fails_at_the_first_answer(
    cluster: Cluster, kubeconfig: pathlib.Path
) -> None:
    cluster.emulator["get /api"] << 401
    with pytest.raises(kube.Unavailable) as refused:
        await kube.preflight()
    assert str(refused.value) == (
        f"the Kubernetes API at {cluster.url} (kubeconfig {kubeconfig}, context emulator) "
        "refused the credentials (401 Unauthorized); check `kubectl auth whoami`"
    )
    assert gets(cluster) == ["/api"]


async def test_an_error_status_is_raised_though_the_body_is_read_as_it_streams(
    cluster: Cluster, kubeconfig: pathlib.Path
) -> None:
    async with await kube.api_client() as api:
        with pytest.raises(ApiException) as missing:
            await kube.get_json(api, "/apis/example.com/v1/nothings")
        versions = await kube.get_json(api, "/api")
    assert missing.value.status == 404
    assert versions["versions"] == ["v1"]


async def test_a_peering_the_server_forbids_is_reported_and_the_replica_works_on(
    cluster: Cluster, kubeconfig: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = "/apis/kopf.dev/v1/clusterkopfpeerings/jobarchive"
    cluster.emulator[f"get {path}"] << 403
    async with await kube.api_client() as api:
        assert await is_active(api, Peering(name="jobarchive", priority=100))
    assert [record.getMessage() for record in caplog.records] == [
        "Cannot read the peering jobarchive: 403 Forbidden"
    ]


async def test_a_kubeconfig_that_is_no_yaml_is_named_in_one_line(
    kubeconfig: pathlib.Path,
) -> None:
    kubeconfig.write_text("apiVersion: v1\nclusters: [unclosed\n")
    with pytest.raises(kube.Unavailable) as unusable:
        await kube.preflight()
    message = str(unusable.value)
    assert message.startswith(f"cannot use the kubeconfig {kubeconfig} (while parsing")
    assert message.endswith("); check `kubectl config view`")
    assert "\n" not in message


async def test_the_clusters_identity_is_its_kube_system_uid_read_with_one_get(
    cluster: Cluster, kubeconfig: pathlib.Path
) -> None:
    found = await identity.identify(None)
    assert found.name == cluster.uid
    assert found.describe() == (
        f"Cluster {cluster.uid} (the kube-system namespace's uid; "
        "JOBARCHIVE_CLUSTER names it otherwise)"
    )
    assert gets(cluster) == ["/api/v1/namespaces/kube-system"]
    assert (await identity.identify("prod-eu-1")).name == "prod-eu-1"
    assert gets(cluster) == ["/api/v1/namespaces/kube-system"]


async def test_an_identity_that_cannot_be_read_says_what_to_grant_or_set(
    cluster: Cluster, kubeconfig: pathlib.Path
) -> None:
    forbidden = {"kind": "Status", "code": 403, "reason": "Forbidden"}
    cluster.kube_system = Response(status=403, payload=forbidden)
    with pytest.raises(identity.Unknown) as refused:
        await identity.identify(None)
    assert str(refused.value) == (
        "cannot read the kube-system namespace's uid (403 Forbidden): grant get on "
        "namespaces/kube-system (manifests/02-rbac.yaml) or set JOBARCHIVE_CLUSTER"
    )
