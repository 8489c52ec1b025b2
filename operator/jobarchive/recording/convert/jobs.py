"""Training job -> ``job_info`` row, its status, times and roles read by its kind's
strategy (``convert.strategies``).

Tenancy comes from KubeDL's ``kubedl.io/tenancy`` annotation, a JSON object
``{"tenant", "user", "region"}``; an unreadable one (not JSON, not an object, nested
too deep to parse) is ignored rather than costing the job its row.
"""

import json
from collections.abc import Mapping
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.kinds import JobKind
from jobarchive.core.rows import (
    API_VERSION_LENGTH,
    NAME_LENGTH,
    REMARK_LENGTH,
    SHORT_TEXT_LENGTH,
    STATUS_LENGTH,
    JobRow,
)
from jobarchive.core.untrusted import mapping, text
from jobarchive.recording.convert.common import identity, uid
from jobarchive.recording.convert.resources import resources_json
from jobarchive.recording.convert.strategies import STRATEGIES, queue

TENANCY_ANNOTATION = "kubedl.io/tenancy"


def job_row(obj: Mapping[str, Any], kind: JobKind, region: str | None) -> JobRow:
    """The ``job_info`` row of a job object of the given kind."""
    meta = mapping(obj.get("metadata"))
    strategy = STRATEGIES[kind.strategy]
    tenancy = _tenancy(mapping(meta.get("annotations")).get(TENANCY_ANNOTATION))
    current = strategy.status(obj)
    base = identity(obj)
    return {
        "name": base["name"],
        "namespace": base["namespace"],
        "version": base["version"],
        "gmt_created": base["gmt_created"],
        "job_id": uid(obj),
        "kind": kind.kind,
        "api_version": clip(text(obj.get("apiVersion")) or kind.api_version, API_VERSION_LENGTH),
        "status": clip(current, STATUS_LENGTH),
        "resources": resources_json(strategy.roles(obj, kind)),
        "deploy_region": clip(region or tenancy.get("region"), SHORT_TEXT_LENGTH),
        # "" rather than NULL without a tenancy, as KubeDL writes them.
        "tenant": clip(tenancy.get("tenant"), SHORT_TEXT_LENGTH) or "",
        "owner": clip(tenancy.get("user"), SHORT_TEXT_LENGTH) or "",
        "deleted": meta.get("deletionTimestamp") is not None,
        "is_in_etcd": True,
        "gmt_finished": strategy.finished(obj, current),
        "gmt_job_running": strategy.running(obj, current),
        "remark": clip(strategy.remark(obj, current), REMARK_LENGTH),
        "queue": clip(queue(obj, strategy), NAME_LENGTH),
    }


def _tenancy(raw: object) -> dict[str, str]:
    value = text(raw)
    if not value:
        return {}
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        # RecursionError: valid JSON nested deeper than the parser recurses, which an
        # annotation's 256 KiB allows many times over.
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {key: item for key in ("tenant", "user", "region") if (item := text(parsed.get(key)))}
