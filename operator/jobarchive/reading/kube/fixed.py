"""What the aggregated API answers from fixed data, before any caller is known or the
database is asked: the discovery documents, and the OpenAPI v3 index and document as
kube-openapi serves them (an ETag, a hash that makes them immutable, a redirect from a
stale hash). The aggregator downloads both with its own front-proxy certificate and
kubectl reads them behind it; nothing in them is the archive's (decision 28).
"""

import datetime
import json

from aiohttp import web

from jobarchive.reading.accept import is_json, media_ranges
from jobarchive.reading.kube import discovery, openapi, status
from jobarchive.reading.kube.discovery import GROUP, PREFIX

# A document named by its hash never changes: kube-openapi's cache headers for it.
IMMUTABLE = "public, immutable"
A_YEAR = datetime.timedelta(days=365)


def mount(app: web.Application) -> None:
    """Add the discovery and OpenAPI routes to ``app``."""
    app.router.add_get("/api", _core)
    app.router.add_get("/apis", _groups)
    app.router.add_get(f"/apis/{GROUP}", _group)
    app.router.add_get(PREFIX, _resources)
    app.router.add_get("/openapi/v2", _no_v2)
    app.router.add_get("/openapi/v3", _index)
    app.router.add_get(r"/openapi/v3/{path:.*}", _document)


async def _core(_: web.Request) -> web.Response:
    return status.response(404, "this server serves no core API: its group is under /apis")


async def _groups(request: web.Request) -> web.Response:
    aggregated = discovery.wants_aggregated(request.headers.get("Accept", "*/*"))
    if aggregated is None:
        return status.response(406, "Accept: application/json or the aggregated discovery")
    if aggregated:
        text = json.dumps(discovery.aggregated())
        return web.Response(body=text.encode(), headers={"Content-Type": discovery.AGGREGATED})
    return web.json_response(discovery.group_list())


async def _group(_: web.Request) -> web.Response:
    return web.json_response(discovery.group())


async def _resources(_: web.Request) -> web.Response:
    return web.json_response(discovery.resource_list())


async def _no_v2(_: web.Request) -> web.Response:
    return status.response(
        404, "no OpenAPI v2 is served for archive.jobarchive.io; see /openapi/v3"
    )


async def _index(_: web.Request) -> web.Response:
    return web.json_response(openapi.index())


async def _document(request: web.Request) -> web.Response:
    """The group's document: JSON only (kube-openapi's protobuf is not served); its
    ETag the hash; with the hash it names, immutable; with a stale one, redirected."""
    if request.match_info["path"] != openapi.GROUP_PATH:
        return status.response(404, f"no OpenAPI document here: see {openapi.DOCUMENT_PATH}")
    if not any(is_json(media) for media, _ in media_ranges(request.headers.get("Accept", "*/*"))):
        return status.response(406, "Accept: the OpenAPI document is served as application/json")
    body, digest = openapi.served()
    headers = {"ETag": f'"{digest}"', "Vary": "Accept"}
    asked = request.query.get("hash")
    if asked is not None and asked != digest:
        raise web.HTTPMovedPermanently(f"{openapi.DOCUMENT_PATH}?hash={digest}", headers=headers)
    if asked is not None:
        expires = datetime.datetime.now(datetime.UTC) + A_YEAR
        headers["Cache-Control"] = IMMUTABLE
        headers["Expires"] = expires.strftime("%a, %d %b %Y %H:%M:%S GMT")
    if request.headers.get("If-None-Match") == headers["ETag"]:
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type="application/json", headers=headers)
