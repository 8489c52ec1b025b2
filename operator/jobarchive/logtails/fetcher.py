"""Reading a container instance's log: one GET on the pods/log subresource.

The request names the container, asks for the previous instance when the failure
is in ``lastState`` (``previous=true``), and bounds the answer with ``tailLines``
and ``limitBytes``. The API server applies ``limitBytes`` to the beginning of the
tailed lines, so asking for exactly the stored limit would lose the end of a long
tail, where the reason is: the server is asked for ``SERVER_BYTES_FACTOR`` times
the limit, and ``text.tail`` keeps the end. Whatever the answer, it becomes a
``Read``: the bytes, or the reason they could not be had (the pod or its log gone,
a refusal, a server or node that did not answer), never an exception.
"""

import asyncio
import dataclasses
import json
import urllib.parse

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from jobarchive.logtails.triggers import Failure

# Seconds one read may take, the answer included: a node that does not answer holds a
# slot no longer than this.
READ_TIMEOUT = 10.0
SERVER_BYTES_FACTOR = 4
MESSAGE_LENGTH = 300


@dataclasses.dataclass(frozen=True)
class Read:
    """What one read of a log gave: the bytes, or why there are none (``reason`` a
    metric label, ``note`` a sentence)."""

    data: bytes | None
    reason: str = ""
    note: str = ""
    # The server stopped at its byte limit: the log's end may be missing.
    incomplete: bool = False


def log_path(failure: Failure) -> str:
    """The pods/log path of the failure's pod."""
    namespace = urllib.parse.quote(failure.namespace, safe="")
    name = urllib.parse.quote(failure.pod, safe="")
    return f"/api/v1/namespaces/{namespace}/pods/{name}/log"


def query(failure: Failure, lines: int, limit: int) -> list[tuple[str, str | int]]:
    """The query of the read: the container, the instance, the bounds."""
    params: list[tuple[str, str | int]] = [
        ("container", failure.container),
        # One line more than kept: whether it comes says whether the tail was cut.
        ("tailLines", lines + 1),
        ("limitBytes", limit * SERVER_BYTES_FACTOR),
    ]
    if failure.previous:
        params.append(("previous", "true"))
    return params


def refusal(status: int, body: bytes) -> Read:
    """A ``Read`` for an error answer, in the API server's own words where it gave some."""
    message = ""
    try:
        parsed = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        message = parsed["message"]
    message = " ".join(message.split())[:MESSAGE_LENGTH]
    if status == 404:
        reason, what = "not_found", "the pod or its log is gone"
    elif status in (401, 403):
        reason, what = "forbidden", "the API server refused (RBAC needs get on pods/log)"
    elif status >= 500:
        reason, what = "server_error", "the API server or the node failed"
    else:
        reason, what = "bad_request", "the API server refused"
    detail = f": {message}" if message else ""
    return Read(None, reason, f"{what} ({status}{detail})")


class Fetcher:
    """Reads log tails through one Kubernetes client."""

    def __init__(self, api: client.ApiClient, lines: int, limit: int) -> None:
        self.api = api
        self.lines = lines
        self.limit = limit

    async def read(self, failure: Failure) -> Read:
        """The tail of the failure's log, or why it could not be read."""
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                return await self._read(failure)
        except TimeoutError:
            return Read(None, "timeout", f"no answer within {READ_TIMEOUT:g} s")
        except ApiException as exc:
            return refusal(
                exc.status or 500, (exc.body or b"") if isinstance(exc.body, bytes) else b""
            )
        except aiohttp.ClientError as exc:
            detail = " ".join(str(exc).split())[:MESSAGE_LENGTH] or type(exc).__name__
            return Read(None, "unreachable", f"the API server could not be reached ({detail})")

    async def _read(self, failure: Failure) -> Read:
        most = self.limit * SERVER_BYTES_FACTOR
        response = await self.api.call_api(
            log_path(failure),
            "GET",
            query_params=query(failure, self.lines, self.limit),
            header_params={"Accept": "*/*"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=True,
        )
        async with response:
            if response.status >= 400:
                return refusal(response.status, await response.content.read(4096))
            data = bytearray()
            # Bounded even if the server ignores limitBytes.
            async for chunk in response.content.iter_chunked(64 * 1024):
                data += chunk
                if len(data) >= most:
                    break
        return Read(bytes(data[:most]), incomplete=len(data) >= most)
