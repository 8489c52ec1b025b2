"""Playing kube-apiserver's aggregator: the ``extension-apiserver-authentication``
ConfigMap published on the emulated API server, a real ``jobarchive serve`` over HTTPS,
and a client that presents the front proxy's certificate (or none)."""

import contextlib
import json
import pathlib
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from jobarchive.reading.frontproxy import CONFIGMAP
from testbed.cluster import ACCESS_REVIEWS, Cluster, Resource
from testbed.operator import write_kubeconfig
from tests.support.pki import Authority, Issued
from tests.support.serve import serve_process

CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PROXY_NAME = "front-proxy-client"


def authentication(ca: Authority, **lists: list[str]) -> dict[str, str]:
    """The ConfigMap's data as kube-apiserver writes it (kubeadm's header names)."""
    data = {
        "requestheader-allowed-names": [PROXY_NAME],
        "requestheader-username-headers": ["X-Remote-User"],
        "requestheader-uid-headers": ["X-Remote-Uid"],
        "requestheader-group-headers": ["X-Remote-Group"],
        "requestheader-extra-headers-prefix": ["X-Remote-Extra-"],
        **lists,
    }
    return {"requestheader-client-ca-file": ca.pem, **{k: json.dumps(v) for k, v in data.items()}}


async def publish(cluster: Cluster, ca: Authority, first: bool = False) -> None:
    """Create the ConfigMap (``first``), or give it another CA."""
    name = CONFIGMAP.rsplit("/", 1)[1]
    if first:
        body = {"metadata": {"name": name, "namespace": "kube-system"}}
        await cluster.create(CONFIGMAPS, {**body, "data": authentication(ca)})
    else:
        await cluster.patch(CONFIGMAPS, "kube-system", name, {"data": authentication(ca)})


@contextlib.asynccontextmanager
async def served_https(
    folder: pathlib.Path, db_url: str, api_server: str, serving: Issued, *args: str
) -> AsyncIterator[str]:
    """``jobarchive serve`` over HTTPS with ``serving``'s certificate, its front proxy's
    configuration read every second; its base URL."""
    kubeconfig = folder / "serve-kubeconfig"
    write_kubeconfig(kubeconfig, api_server)
    tls = ("--tls-cert-file", str(serving.cert), "--tls-private-key-file", str(serving.key))
    env = {"KUBECONFIG": str(kubeconfig), "JOBARCHIVE_REQUESTHEADER_REFRESH": "1"}
    async with serve_process(db_url, folder / "serve.log", *tls, *args, **env) as running:
        yield f"https://127.0.0.1:{running.port}"


Headers = Mapping[str, str] | list[tuple[str, str]]


class Client:
    """HTTPS to the server, trusting ``ca`` for its certificate, presenting ``identity``."""

    def __init__(self, ca: pathlib.Path, identity: Issued | None = None) -> None:
        self.context = ssl.create_default_context(cafile=str(ca))
        if identity is not None:
            self.context.load_cert_chain(identity.cert, identity.key)

    def session(self) -> aiohttp.ClientSession:
        """A session of one kept-alive connection at most."""
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.context, limit=1))

    async def get(self, url: str, headers: Headers | None = None) -> int:
        async with self.session() as session:
            return await status(session, url, headers)

    async def names(self, url: str, headers: Headers) -> tuple[int, list[str]]:
        async with self.session() as session, session.get(url, headers=headers) as response:
            body = await response.json()
            return response.status, sorted(job["namespace"] for job in body.get("items", []))


async def status(session: aiohttp.ClientSession, url: str, headers: Headers | None = None) -> int:
    async with session.get(url, headers=headers) as response:
        await response.read()
        return response.status


def access_reviews(cluster: Cluster) -> list[dict[str, Any]]:
    """The specs of the SubjectAccessReviews the emulated API server received."""
    path = ACCESS_REVIEWS.path(None)
    return [request.data["spec"] for request in cluster.emulator if request.url.path == path]
