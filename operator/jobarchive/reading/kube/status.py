"""Failures as ``metav1.Status``, the body kubectl reads an error from: the read side's
refusals (``handling.Refusal``) with their code and headers, and aiohttp's own (no
route, a method other than GET) on the Kubernetes paths."""

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from jobarchive.core.cutting import clip
from jobarchive.reading.handling import Refusal
from jobarchive.reading.kube.discovery import GROUP

# kubectl prints "Error from server (<reason>): <message>", 401 as "You must be logged in".
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def body(code: int, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A Status of failure: its code, the reason kubectl names, the message."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": REASONS.get(code, "Unknown"),
        "code": code,
    }
    if details:
        status["details"] = dict(details)
    return status


def response(
    code: int,
    message: str,
    headers: Mapping[str, str] | None = None,
    details: Mapping[str, Any] | None = None,
) -> web.Response:
    """A Status answer."""
    return web.json_response(body(code, message, details), status=code, headers=headers)


def refused(refusal: Refusal) -> web.Response:
    """A refusal of the read side as a Status, its code and headers kept; a 429's
    ``Retry-After`` also as ``details.retryAfterSeconds``, as kube-apiserver says it."""
    retry = refusal.headers.get("Retry-After") if refusal.status == 429 else None
    details = {"retryAfterSeconds": int(retry)} if retry else None
    return response(refusal.status, refusal.message, refusal.headers or None, details)


def not_found(plural: str, name: str) -> str:
    """What 404 says of a named object, as kube-apiserver words it; said alike of an
    object that never was and of one the caller may not see."""
    return f"{plural}.{GROUP} {json.dumps(clip(name, 81))} not found"


def _ours(path: str) -> bool:
    return path in ("/api", "/apis") or path.startswith(("/apis/", "/openapi/"))


@web.middleware
async def statuses(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """aiohttp's refusals of the Kubernetes paths (404 no route, 405 not GET) as Statuses."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or not _ours(request.path):
            raise
        allow = {"Allow": exc.headers["Allow"]} if "Allow" in exc.headers else None
        what = "the path is not served" if exc.status == 404 else f"{request.method} is not served"
        return response(
            exc.status, f"{what}: this server answers GET of archive.jobarchive.io/v1", allow
        )
