"""A history recorded through the real write path (Recorder -> Writer -> Store), for the
tests of what reads it: realistic jobs, pods and Events, at chosen times."""

import itertools
import json
import uuid
from typing import Any

from jobarchive.config import load
from jobarchive.recording.attribution import Attribution
from jobarchive.recording.convert.strategies import KUEUE_QUEUE_LABEL
from jobarchive.recording.recorder import Recorder
from jobarchive.storage.store import Store
from jobarchive.storage.writer import Writer
from testbed import objects as o
from testbed.objects import Body

EXAMPLES = {"TFJob": "tfjob-simple.yaml", "PyTorchJob": "pytorch-simple.yaml"}
SPECS = {"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs"}


class History:
    """Records jobs, pods and Events as the operator would on watch events."""

    def __init__(self) -> None:
        self.settings = load({})
        self.writer = Writer(Store(), flushers=1)
        self.recorder = Recorder(self.settings, Store(), self.writer, Attribution())
        self._versions = itertools.count(1000)

    async def __aenter__(self) -> "History":
        self.writer.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.writer.stop()

    def _meta(self, body: Body, **meta: Any) -> Body:
        meta.setdefault("uid", str(uuid.uuid4()))
        return o.with_meta(body, resourceVersion=str(next(self._versions)), **meta)

    async def job(
        self,
        name: str,
        namespace: str = "team-a",
        kind: str = "TFJob",
        created: str = o.T0,
        status: str = "Running",
        finished: str | None = None,
        owner: str | None = None,
        tenant: str | None = None,
        region: str | None = None,
        gone: bool = False,
        queue: str | None = None,
    ) -> Body:
        """A job in a status; ``finished`` is when its terminal condition came; ``queue``
        as Kueue's label names it."""
        annotations = {}
        if owner or tenant or region:
            tenancy = {"user": owner, "tenant": tenant, "region": region}
            annotations["kubedl.io/tenancy"] = json.dumps(tenancy)
        body = self._meta(
            o.example(EXAMPLES[kind]),
            name=name,
            namespace=namespace,
            creationTimestamp=created,
            annotations=annotations,
            **({"labels": {KUEUE_QUEUE_LABEL: queue}} if queue else {}),
        )
        conditions = [o.condition("Created", at=created)]
        if status != "Created":
            conditions.append(o.condition(status, at=finished or created))
        body["status"] = o.job_status(*conditions, completion=finished)
        job_kind = o.job_kind(self.settings.kinds, body)
        await self.recorder.job(job_kind, "ADDED", body)
        if gone:
            await self.recorder.job(
                job_kind, "DELETED", self._meta(body, uid=body["metadata"]["uid"])
            )
        return body

    async def pod(
        self,
        job: Body,
        replica_type: str,
        index: int,
        status: Body | None = None,
        gone: bool = False,
    ) -> Body:
        """A pod of a job, in the given status (Pending when none)."""
        body = self._meta(o.kubeflow_pod(job, SPECS[job["kind"]], replica_type, index))
        if status is not None:
            body["status"] = status
        await self.recorder.pod("ADDED", body)
        if gone:
            await self.recorder.pod("DELETED", self._meta(body, uid=body["metadata"]["uid"]))
        return body

    async def event(self, involved: Body, reason: str, message: str, **fields: Any) -> Body:
        """An Event about a job or pod."""
        body = self._meta(o.event(involved, reason, message, **fields))
        await self.recorder.event("ADDED", body)
        return body
