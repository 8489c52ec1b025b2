"""The tests play kube-apiserver's aggregator against a real ``jobarchive serve`` over
HTTPS: a front-proxy CA made here, its client certificate with an allowed name, one
with a name not allowed, one of a rogue CA, and every way to pass for someone else.
The emulated API server holds the ``extension-apiserver-authentication`` ConfigMap
and answers the reviews; those are the only requests the API makes to it."""

import asyncio
import contextlib
import dataclasses
import os
import pathlib
import ssl

import aiohttp
import pytest

from jobarchive.reading.api import PREFIX
from jobarchive.reading.frontproxy import CONFIGMAP
from jobarchive.reading.kube import discovery
from testbed.cluster import (
    REVIEWS,
    TOKEN_REVIEWS,
    USER_AGENT,
    Cluster,
    Reviews,
)
from testbed.ports import free_port
from tests.support.aggregator import (
    CONFIGMAPS,
    PROXY_NAME,
    Client,
    access_reviews,
    publish,
    served_https,
    status,
)
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.history import History
from tests.support.operators import OperatorFactory
from tests.support.pki import Authority, Issued
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
ALICE, BOB = "alice-token", "bob-token"


@pytest.fixture
def reviews(cluster: Cluster) -> Reviews:
    """alice (a token) in group ml-team-a, which reads team-a; bob reads everything."""
    table = Reviews(cluster)
    table.user(ALICE, "alice", "ml-team-a")
    table.grant("group:ml-team-a", "team-a")
    table.grant("user:bob")
    return table


@pytest.fixture
async def jobs(archive: str) -> None:
    """One recorded job in team-a, one in team-b."""
    async with History() as history:
        await history.job("mnist", namespace="team-a")
        await history.job("bert", namespace="team-b")


async def refused(url: str, context: ssl.SSLContext) -> str:
    """How a connection presenting a client certificate the server does not trust ends:
    in the handshake, or (TLS 1.3, where the client's certificate is checked after the
    client's side of the handshake is done) closed before its request is answered; or
    "answered"."""
    host, port = url.removeprefix("https://").split(":")
    try:
        reader, writer = await asyncio.open_connection(host, int(port), ssl=context)
    except (ssl.SSLError, ConnectionError) as exc:
        return f"in the handshake: {exc}"
    try:
        writer.write(
            f"GET {PREFIX}/jobs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        )
        answer = await reader.read()
    except (ssl.SSLError, ConnectionError) as exc:
        return f"unanswered: {exc}"
    finally:
        writer.close()
    return "answered" if answer else "unanswered: closed"


def requests_by_the_api(cluster: Cluster) -> set[str]:
    """What the API asked of the emulated API server, by method and path."""
    return {
        f"{request.method.value} {request.url.path}"
        for request in cluster.emulator
        if request.headers.get("User-Agent") != USER_AGENT
    }


@dataclasses.dataclass(frozen=True)
class Played:
    """The aggregator's side played here: the front proxy's CA, published in the
    ConfigMap; serve's certificate, and the file of the CA that signed it."""

    proxy_ca: Authority
    serving: Issued
    trusted: pathlib.Path


@pytest.fixture
async def played(cluster: Cluster, tmp_path: pathlib.Path) -> Played:
    cluster.serve(CONFIGMAPS)
    serving_ca = Authority(tmp_path / "serving", "serving-ca")
    proxy_ca = Authority(tmp_path / "proxy", "front-proxy-ca")
    await publish(cluster, proxy_ca, first=True)
    return Played(proxy_ca, serving_ca.issue("127.0.0.1", server=True), serving_ca.write())


async def test_only_the_front_proxys_certificate_makes_its_headers_believed(
    cluster: Cluster,
    reviews: Reviews,
    jobs: None,
    played: Played,
    e2e_db_url: str,
    tmp_path: pathlib.Path,
) -> None:
    proxy_ca, serving, trusted = played.proxy_ca, played.serving, played.trusted
    rogue_ca = Authority(tmp_path / "rogue", "front-proxy-ca")
    proxy = Client(trusted, proxy_ca.issue(PROXY_NAME))
    wrong_name = Client(trusted, proxy_ca.issue("someone-else"))
    nobody = Client(trusted)
    async with served_https(tmp_path, e2e_db_url, cluster.url, serving) as base:
        await eventually(lambda: answers(nobody, base), within=30)
        jobs_url = f"{base}{PREFIX}/jobs"
        as_bob = {"X-Remote-User": "bob"}

        # The front proxy names bob: bob reads every namespace, and no token is reviewed.
        assert await proxy.names(jobs_url, as_bob) == (200, ["team-a", "team-b"])
        assert cluster.requests_to(TOKEN_REVIEWS) == 0

        # The same headers from anyone else are ignored: no token, 401; alice's token
        # makes alice the caller, who may not read every namespace.
        with_alice = {**as_bob, "Authorization": f"Bearer {ALICE}"}
        for client in (nobody, wrong_name):
            assert await client.get(jobs_url, as_bob) == 401
            assert await client.get(jobs_url, {**as_bob, "X-Remote-Group": "system:masters"}) == 401
            assert await client.get(jobs_url, with_alice) == 403
            assert (await client.names(f"{jobs_url}?namespace=team-a", with_alice))[0] == 200

        # A certificate of another CA, with the front proxy's name: refused at the handshake.
        rogue = Client(trusted, rogue_ca.issue(PROXY_NAME)).context
        reviews_before = len(access_reviews(cluster))
        assert await refused(base, proxy.context) == "answered"
        assert (await refused(base, rogue)).startswith("unanswered")
        rogue.maximum_version = ssl.TLSVersion.TLSv1_2
        assert (await refused(base, rogue)).startswith("in the handshake")
        assert len(access_reviews(cluster)) == reviews_before

        # The front proxy's groups, uid and extra go to the SubjectAccessReview as it sent
        # them, the extra's names lower-cased and percent-decoded.
        carol = [
            ("X-Remote-User", "carol"),
            ("X-Remote-Uid", "uid-of-carol"),
            ("X-Remote-Group", "ml-team-a"),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes", "read"),
            ("X-Remote-Extra-Scopes", "write"),
            ("X-Remote-Extra-Acme.com%2FProject", "p1"),
        ]
        assert await proxy.get(f"{jobs_url}?namespace=team-a", carol) == 200
        assert await proxy.get(f"{jobs_url}?namespace=team-b", carol) == 403
        assert access_reviews(cluster)[-1] == {
            "user": "carol",
            "uid": "uid-of-carol",
            "groups": ["ml-team-a", "system:authenticated"],
            "extra": {"scopes": ["read", "write"], "acme.com/project": ["p1"]},
            "resourceAttributes": {
                "group": "jobarchive.io",
                "resource": "jobs",
                "verb": "list",
                "namespace": "team-b",
            },
        }

        # The front proxy naming no user: its groups alone are nobody.
        assert await proxy.get(jobs_url, {"X-Remote-Group": "system:masters"}) == 401
        # Two users, or two Authorization headers: which one was meant is unknowable.
        two_users = [("X-Remote-User", "bob"), ("X-Remote-User", "alice")]
        assert await proxy.get(jobs_url, two_users) == 400
        two_tokens = [("Authorization", f"Bearer {ALICE}"), ("Authorization", "Bearer other")]
        assert await nobody.get(jobs_url, two_tokens) == 400
        assert await proxy.get(jobs_url, [*two_tokens, ("X-Remote-User", "bob")]) == 400

        # A new CA in the ConfigMap is taken up without a restart; the old one is refused,
        # on a new connection at the handshake, on one opened before at the next request.
        rotated_ca = Authority(tmp_path / "rotated", "front-proxy-ca-2")
        rotated = Client(trusted, rotated_ca.issue(PROXY_NAME))
        async with proxy.session() as before:
            assert await status(before, jobs_url, as_bob) == 200
            await publish(cluster, rotated_ca)

            async def rotated_out() -> bool:
                # Were the kept connection closed meanwhile (idle past the header
                # timeout on a stalled machine), its reopening is refused at the
                # handshake: the old CA is out either way.
                try:
                    return await status(before, jobs_url, as_bob) == 401
                except aiohttp.ClientConnectionError:
                    return True

            await eventually(rotated_out, within=30)
        assert await rotated.names(jobs_url, as_bob) == (200, ["team-a", "team-b"])
        assert (await refused(base, proxy.context)).startswith("unanswered")

    # Nothing but the ConfigMap read and the reviews.
    reviewed = {f"POST {resource.path(None)}" for resource in REVIEWS}
    assert requests_by_the_api(cluster) <= {f"GET {CONFIGMAP}", *reviewed}
    assert f"GET {CONFIGMAP}" in requests_by_the_api(cluster)


async def answers(client: Client, base: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError):
        return await client.get(f"{base}{PREFIX}/openapi.json") == 401
    return False


async def test_the_operators_api_serves_tls_from_the_files_its_variables_name(
    cluster: Cluster,
    reviews: Reviews,
    start_operator: OperatorFactory,
    archive: str,
    played: Played,
) -> None:
    serving, trusted = played.serving, played.trusted
    port = free_port()
    await start_operator(
        JOBARCHIVE_API_PORT=str(port),
        JOBARCHIVE_API_HOST="127.0.0.1",
        JOBARCHIVE_API_TLS_CERT_FILE=str(serving.cert),
        JOBARCHIVE_API_TLS_KEY_FILE=str(serving.key),
    )
    base = f"https://127.0.0.1:{port}"
    proxy, nobody = Client(trusted, played.proxy_ca.issue(PROXY_NAME)), Client(trusted)
    await eventually(lambda: answers(nobody, base), within=60)
    jobs_url = f"{base}{PREFIX}/jobs"
    assert await proxy.get(jobs_url, {"X-Remote-User": "bob"}) == 200
    assert await nobody.get(jobs_url, {"X-Remote-User": "bob"}) == 401
    assert (
        await nobody.get(f"{jobs_url}?namespace=team-a", {"Authorization": f"Bearer {ALICE}"})
        == 200
    )
    with pytest.raises(aiohttp.ClientError):
        async with aiohttp.ClientSession() as session:
            await status(session, f"http://127.0.0.1:{port}{PREFIX}/jobs")
    assert cluster.writes_by_others() == []


async def test_jobarchive_serve_makes_a_certificate_of_its_own_when_asked(
    archive: str, tmp_path: pathlib.Path
) -> None:
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    env = {**inherited, "JOBARCHIVE_DB_URL": archive}
    command = ("serve", "--port", str(port), "--auth", "none", "--tls-self-signed")
    with (tmp_path / "serve.log").open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(JOBARCHIVE), *command, env=env, stdout=log, stderr=log
        )
    try:

        async def presented() -> str | None:
            with contextlib.suppress(OSError):
                return await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", port))
            return None

        made = tmp_path / "made.pem"
        made.write_text(await eventually(presented, within=30))
        context = ssl.create_default_context(cafile=str(made))
        connector = aiohttp.TCPConnector(ssl=context)
        async with aiohttp.ClientSession(connector=connector) as session:
            # Its name is the host's: localhost, as the certificate says.
            assert await status(session, f"https://localhost:{port}{PREFIX}/jobs") == 200
    finally:
        process.terminate()
        await process.wait()
        print((tmp_path / "serve.log").read_text())


async def test_a_ca_file_and_names_given_replace_the_configmap_and_follow_the_file(
    cluster: Cluster, reviews: Reviews, jobs: None, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    serving_ca = Authority(tmp_path / "serving", "serving-ca")
    proxy_ca = Authority(tmp_path / "proxy", "front-proxy-ca")
    ca_file = proxy_ca.write()
    serving = serving_ca.issue("127.0.0.1", server=True)
    trusted = serving_ca.write()
    named = Client(trusted, proxy_ca.issue("aggregator"))
    overrides = (
        "--requestheader-client-ca-file",
        str(ca_file),
        "--requestheader-allowed-names",
        "aggregator",
    )
    async with served_https(tmp_path, e2e_db_url, cluster.url, serving, *overrides) as base:
        await eventually(lambda: answers(Client(trusted), base), within=30)
        jobs_url = f"{base}{PREFIX}/jobs"
        assert await named.get(jobs_url, {"X-Remote-User": "bob"}) == 200
        not_named = Client(trusted, proxy_ca.issue(PROXY_NAME))
        assert await not_named.get(jobs_url, {"X-Remote-User": "bob"}) == 401

        # The file is read again: a CA put in its place is verified from then on.
        rotated_ca = Authority(tmp_path / "rotated", "front-proxy-ca-2")
        rotated = Client(trusted, rotated_ca.issue("aggregator"))
        ca_file.write_text(rotated_ca.pem)

        async def rotated_in() -> bool:
            with contextlib.suppress(aiohttp.ClientError, ssl.SSLError):
                return await rotated.get(jobs_url, {"X-Remote-User": "bob"}) == 200
            return False

        await eventually(rotated_in, within=30)
    reviewed = {f"POST {resource.path(None)}" for resource in REVIEWS}
    assert requests_by_the_api(cluster) == reviewed - {f"POST {TOKEN_REVIEWS.path(None)}"}


async def test_a_configmap_that_cannot_be_read_believes_no_proxy_and_says_so_once(
    cluster: Cluster, reviews: Reviews, jobs: None, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    serving_ca = Authority(tmp_path / "serving", "serving-ca")
    proxy_ca = Authority(tmp_path / "proxy", "front-proxy-ca")
    serving = serving_ca.issue("127.0.0.1", server=True)
    trusted = serving_ca.write()
    proxy = Client(trusted, proxy_ca.issue(PROXY_NAME))
    async with served_https(tmp_path, e2e_db_url, cluster.url, serving) as base:
        nobody = Client(trusted)
        await eventually(lambda: answers(nobody, base), within=30)
        jobs_url = f"{base}{PREFIX}/jobs?namespace=team-a"

        async def read_thrice() -> bool:
            return sum(1 for r in cluster.emulator if r.url.path == CONFIGMAP) >= 3

        # Read at start and every second since: three reads, all failed.
        await eventually(read_thrice, within=30)
        # The API answers: the token decides, and no CA means no proxy's certificate.
        assert await nobody.get(jobs_url, {"Authorization": f"Bearer {ALICE}"}) == 200
        assert await nobody.get(jobs_url, {"X-Remote-User": "bob"}) == 401
        assert (await refused(base, proxy.context)).startswith("unanswered")
    said = (tmp_path / "serve.log").read_text()
    assert said.count("Cannot read the front proxy's configuration") == 1, said
    assert "believing no proxy" in said


async def test_an_operator_whose_certificate_does_not_load_records_without_its_api(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path: pathlib.Path
) -> None:
    broken, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    broken.write_text("not a certificate")
    key.write_text("not a key either")
    port = free_port()
    operator = await start_operator(
        JOBARCHIVE_API_PORT=str(port),
        JOBARCHIVE_API_HOST="127.0.0.1",
        JOBARCHIVE_API_TLS_CERT_FILE=str(broken),
        JOBARCHIVE_API_TLS_KEY_FILE=str(key),
    )

    async def recording() -> bool:
        return "Recording" in operator.log()

    await eventually(recording, within=60)
    said = operator.log()
    assert f"Cannot serve the API: {broken}:" in said
    assert "not a key either" not in said
    # Nothing listens on its port.
    with pytest.raises(aiohttp.ClientConnectorError):
        async with aiohttp.ClientSession() as session:
            await status(session, f"https://127.0.0.1:{port}/")


# The Accept header of `kubectl get`.
KUBECTL_TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


async def test_kubectl_get_through_the_aggregator_is_reviewed_as_the_proxied_user(
    cluster: Cluster,
    reviews: Reviews,
    jobs: None,
    played: Played,
    e2e_db_url: str,
    tmp_path: pathlib.Path,
) -> None:
    # kubectl cannot speak front-proxy; these are the requests kube-apiserver sends for
    # its `kubectl get archivedjobs -n team-a` (dana: in group ml-team-a), its token
    # already reviewed by kube-apiserver and not passed on.
    proxy = Client(played.trusted, played.proxy_ca.issue(PROXY_NAME))
    dana = [
        ("Accept", KUBECTL_TABLE),
        ("User-Agent", "kubectl/v1.37.0 (linux/amd64) kubernetes/0000000"),
        ("X-Forwarded-For", "10.0.0.7"),
        ("X-Remote-User", "dana"),
        ("X-Remote-Group", "ml-team-a"),
        ("X-Remote-Group", "system:authenticated"),
    ]
    listed = f"{discovery.PREFIX}/namespaces/%s/archivedjobs?limit=500"
    async with served_https(tmp_path, e2e_db_url, cluster.url, played.serving) as base:
        await eventually(lambda: answers(Client(played.trusted), base), within=30)
        async with proxy.session() as session:
            async with session.get(base + listed % "team-a", headers=dana) as response:
                assert response.status == 200, await response.text()
                table = await response.json()
            assert [(r["cells"][0], r["object"]["kind"]) for r in table["rows"]] == [
                ("mnist", "PartialObjectMetadata")
            ]
            assert table["kind"] == "Table"
            assert [c["name"] for c in table["columnDefinitions"]][:2] == ["Name", "Kind"]
            assert access_reviews(cluster)[-1] == {
                "user": "dana",
                "groups": ["ml-team-a", "system:authenticated"],
                "resourceAttributes": {
                    "group": "archive.jobarchive.io",
                    "resource": "archivedjobs",
                    "verb": "list",
                    "namespace": "team-a",
                },
            }
            async with session.get(base + listed % "team-b", headers=dana) as response:
                refused = await response.json()
            assert (response.status, refused["reason"]) == (403, "Forbidden")
            assert "'dana' may not list archivedjobs.archive.jobarchive.io" in refused["message"]
    assert cluster.requests_to(TOKEN_REVIEWS) == 0
