"""A job kind jobarchive does not know, as ``JOBARCHIVE_EXTRA_KINDS`` adds one."""

import json

LLMJOB = {
    "group": "ml.example.com",
    "version": "v1",
    "plural": "llmjobs",
    "kind": "LLMJob",
    "replica_specs_key": "llmReplicaSpecs",
    "main_container": "trainer",
}
# The environment that adds it.
EXTRA_KINDS = {"JOBARCHIVE_EXTRA_KINDS": json.dumps([LLMJOB])}
