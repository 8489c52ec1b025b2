"""A client of Prometheus' HTTP API: instant queries (``/api/v1/query``) whose answer is
an instant vector, for the efficiency of pods that ended.

Every failure is one ``PrometheusError`` whose ``retryable`` says whether asking again
later may succeed: Prometheus away, slow, overloaded (a refused connection, a timeout,
HTTP 429 or 5xx) is retryable, and so is an endpoint that turns every query away
whatever it says (a redirect, 401, 403, 404, 405, 407: a wrong URL or credentials, which
a fix or a token's rotation mends); a query Prometheus refuses (400 ``bad_data``, 422
``execution``, any other 4xx), an answer that is not an instant vector, or one over
``MAX_BODY`` bytes is not (the caller records the figure as unknown). The bearer token
is read from its file at each query, so a rotated one is used; it is never part of a
message or a log line.

A sample whose value is not finite (NaN, from ``0/0`` or an average of nothing; ±Inf
from a division by zero) is left out of the answer: such a series carries no figure,
as one Prometheus does not have.
"""

import datetime
import json
import math
import pathlib
import ssl
from typing import Any

import aiohttp

from jobarchive.config import ConfigError, check_prometheus_url
from jobarchive.core.efficiency import Sample
from jobarchive.core.visible import visible

# The most bytes of an answer read: a few thousand series, far more than one pod has; a
# huge or hostile answer is refused past it, not held in memory.
MAX_BODY = 4 * 2**20
QUERY_PATH = "/api/v1/query"
# Prometheus' error text in a message, at most (it may quote the query).
_SHOWN = 300
# The endpoint's answers, not the query's: every query would get them until the URL or
# the credentials are fixed, so the pods wait for that instead of being refused.
_ENDPOINT = frozenset({301, 302, 303, 307, 308, 401, 403, 404, 405, 407})


class PrometheusError(Exception):
    """A query that failed; ``retryable``: asking again later may succeed."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class Prometheus:
    """Queries one Prometheus; ``close`` releases its connections."""

    def __init__(
        self,
        url: str,
        token_file: pathlib.Path | None = None,
        ca_file: pathlib.Path | None = None,
        timeout: float = 30.0,
        max_body: int = MAX_BODY,
    ) -> None:
        """``url``: the base URL (``check_prometheus_url``'s rules); ``ca_file``: the CA
        bundle an https:// server is verified with, else the system's (one it cannot read
        is a ConfigError); ``timeout``: seconds a query may take, connecting included
        (Prometheus is told it too)."""
        self.url = check_prometheus_url(url)
        self.token_file = token_file
        self.timeout = timeout
        self.max_body = max_body
        self._context: ssl.SSLContext | bool = True
        if ca_file is not None:
            try:
                self._context = ssl.create_default_context(cafile=str(ca_file))
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"JOBARCHIVE_PROMETHEUS_CA_FILE: {ca_file} is not a readable PEM CA bundle "
                    f"({visible(str(exc.strerror or exc), limit=_SHOWN)})"
                ) from None
        self._session: aiohttp.ClientSession | None = None

    async def query(self, promql: str, at: datetime.datetime) -> list[Sample]:
        """The instant vector ``promql`` evaluates to at ``at`` (an aware datetime);
        raises PrometheusError."""
        if at.tzinfo is None:
            raise ValueError("Prometheus.query: a naive datetime")
        # Seconds as a plain number: Prometheus reads "2.5", not "2.5s", as a duration.
        form = {"query": promql, "time": f"{at.timestamp():.3f}", "timeout": f"{self.timeout:g}"}
        token = self._token()
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        try:
            return await self._ask(form, headers)
        except PrometheusError as exc:
            # A proxy's error page may quote the request's headers back.
            if token and token in str(exc):
                redacted = str(exc).replace(token, "***")
                raise PrometheusError(redacted, retryable=exc.retryable) from None
            raise

    async def _ask(self, form: dict[str, str], headers: dict[str, str]) -> list[Sample]:
        try:
            # No redirect followed: the token goes to the URL configured, nowhere else.
            async with self._client().post(
                self.url + QUERY_PATH, data=form, headers=headers, allow_redirects=False
            ) as reply:
                body = await self._body(reply)
                status = reply.status
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            # The connection's failure: the address and the OS's reason, never a header.
            raise PrometheusError(
                f"Prometheus at {self.url} did not answer: {_reason(exc)}", retryable=True
            ) from None
        return self._vector(status, body)

    async def close(self) -> None:
        """Close the connections; a later query opens new ones."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._context),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                # Nothing of the environment: no proxy, no .netrc credentials.
                trust_env=False,
            )
        return self._session

    def _token(self) -> str | None:
        """The file's token, surrounding whitespace ignored; None when there is no file
        or it is empty. Unreadable, or not one printable word: retryable, as a file
        being rotated may be; the token is never shown."""
        if self.token_file is None:
            return None
        try:
            token = self.token_file.read_text(errors="replace").strip()
        except OSError as exc:
            # Mid-rotation a projected token's file may be briefly missing.
            raise PrometheusError(
                f"the token file {self.token_file} cannot be read: {exc.strerror}",
                retryable=True,
            ) from None
        # A header cannot carry a line break or a control character (and the HTTP
        # library's refusal would quote the header, token and all).
        if not all(" " < character < "\x7f" for character in token):
            raise PrometheusError(
                f"the token file {self.token_file} holds more than one printable ASCII word",
                retryable=True,
            )
        return token or None

    async def _body(self, reply: aiohttp.ClientResponse) -> bytes:
        """The answer's bytes, refused past ``max_body`` before more are read."""
        if (reply.content_length or 0) > self.max_body:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        async for chunk in reply.content.iter_chunked(64 * 1024):
            size += len(chunk)
            if size > self.max_body:
                raise self._too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self) -> PrometheusError:
        return PrometheusError(
            f"Prometheus at {self.url} answered more than {self.max_body} bytes: refused",
            retryable=False,
        )

    def _vector(self, status: int, body: bytes) -> list[Sample]:
        """The samples of a success, or the error the status and body say."""
        answer = _json(body)
        if status != 200 or answer.get("status") != "success":
            retryable = status == 429 or status >= 500 or status in _ENDPOINT
            kind = answer.get("errorType") or "no errorType"
            said = answer.get("error") or visible(body.decode(errors="replace"), limit=_SHOWN)
            kind = visible(str(kind), limit=40)
            raise PrometheusError(
                f"Prometheus at {self.url} answered HTTP {status} ({kind}): "
                f"{visible(str(said), limit=_SHOWN)}",
                retryable=retryable,
            )
        data = answer.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            found = data.get("resultType") if isinstance(data, dict) else None
            raise PrometheusError(
                f"Prometheus at {self.url} answered a {visible(str(found), limit=40)}, "
                "not an instant vector",
                retryable=False,
            )
        try:
            return [sample for entry in data["result"] if (sample := _sample(entry)) is not None]
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            raise PrometheusError(
                f"Prometheus at {self.url} answered a malformed vector", retryable=False
            ) from None


def _json(body: bytes) -> dict[str, Any]:
    """The answer's JSON object; empty when it is none (a proxy's HTML page)."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return answer if isinstance(answer, dict) else {}


def _sample(entry: Any) -> Sample | None:
    """One series of a vector, ``{"metric": {...}, "value": [time, "1.5"]}``; None for a
    value that is not finite. Raises KeyError, TypeError or ValueError when malformed."""
    labels = entry["metric"]
    # A JSON object's keys are text; its values must be too (checked in C, not per label).
    if not isinstance(labels, dict) or not set(map(type, labels.values())) <= {str}:
        raise TypeError("a label that is not text")
    raw = entry["value"][1]
    if not isinstance(raw, str):
        raise TypeError("a value that is not text")
    value = float(raw)
    return Sample(dict(labels), value) if math.isfinite(value) else None


def _reason(exc: BaseException) -> str:
    """What failed, in a line: the exception's kind, and its text when it has one."""
    text = str(exc)
    name = type(exc).__name__
    return visible(f"{name}: {text}" if text else name, limit=_SHOWN)
