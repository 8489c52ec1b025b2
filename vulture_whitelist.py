"""Names vulture (`make lint`) reports unused that are used where it cannot see: Kopf's
and Tortoise's hooks and settings, Tortoise models' Meta and fields, attributes the Jinja
templates read, functions operator/main.py calls, imports used in quoted annotations,
dataclass fields read by name (the export's columns), the failure taxonomy's entry points
(which only its tests call until the recorder and the read side use them, decision 42),
Kueue's attempts' and waits' columns and figures (rows built as dicts; only their tests
read the figures until the read side shows them, decision 43), the Prometheus settings
and client (only their tests use them until the efficiency pass reads pods' figures).
Reviewed one by one: a new entry needs the same reason; anything else vulture finds is
dead code to delete."""

# ruff: noqa
_.build  # unused method (operator/jobarchive/bindings.py:91)
extra_fields  # unused variable (operator/jobarchive/bindings.py:91)
_.fetch  # unused method (operator/jobarchive/bindings.py:95)
essence  # unused variable (operator/jobarchive/bindings.py:99)
patch  # unused variable (operator/jobarchive/bindings.py:99)
register  # unused function (operator/jobarchive/bindings.py:145)
_.finalizer  # unused attribute (operator/jobarchive/bindings.py:206)
_.diffbase_storage  # unused attribute (operator/jobarchive/bindings.py:220)
_.idle_timeout  # unused attribute (operator/jobarchive/bindings.py:221)
_.chunk_size  # unused attribute (operator/jobarchive/bindings.py:222)
preflight  # unused function (operator/jobarchive/infra/cluster.py:153)
meaning  # unused variable (operator/jobarchive/exporting/columns.py:18)
href  # unused variable (operator/jobarchive/reading/console/charts.py:54)
whisker_x  # unused variable (operator/jobarchive/reading/console/charts.py:193)
href  # unused variable (operator/jobarchive/reading/console/charts.py:194)
_.json_of  # unused method (operator/jobarchive/reading/console/mounts.py:36)
_.logs_json_of  # unused method (operator/jobarchive/reading/console/mounts.py:40)
x_started  # unused variable (operator/jobarchive/reading/console/gantt.py:65)
x_end  # unused variable (operator/jobarchive/reading/console/gantt.py:66)
x_restarted  # unused variable (operator/jobarchive/reading/console/gantt.py:73)
grouped_roles  # unused variable (operator/jobarchive/reading/console/gantt.py:112)
MultiMapping  # unused import (operator/jobarchive/reading/handling.py:24)
__getattr__  # unused function (operator/jobarchive/reading/kube/__init__.py:20)
MultiMapping  # unused import (operator/jobarchive/reading/kube/routes.py:14)
MultiMapping  # unused import (operator/jobarchive/reading/parsing.py:7)
Literal  # unused import (operator/jobarchive/reading/queries/created.py:7)
ValuesQuery  # unused import (operator/jobarchive/reading/queries/created.py:10)
ValuesListQuery  # unused import (operator/jobarchive/reading/queries/jobs.py:13)
database_func  # unused variable (operator/jobarchive/reading/queries/source.py:48)
pods_cut  # unused variable (operator/jobarchive/reading/queries/timeline.py:57)
gpu_hours  # unused variable (operator/jobarchive/reading/queries/facts.py:70)
cpu_hours  # unused variable (operator/jobarchive/reading/queries/facts.py:71)
MultiMapping  # unused import (operator/jobarchive/reading/requestheader.py:16)
_.levelname  # unused attribute (operator/jobarchive/infra/serving.py:55)
_.levelno  # unused attribute (operator/jobarchive/infra/serving.py:55)
preflight  # unused function (operator/jobarchive/storage/database.py:201)
_.create_connection  # unused method (operator/jobarchive/storage/failover.py:213)
_._in_transaction  # unused method (operator/jobarchive/storage/failover.py:234)
client_class  # unused variable (operator/jobarchive/storage/failover.py:297)
Meta  # unused class (operator/jobarchive/storage/models.py:70)
abstract  # unused variable (operator/jobarchive/storage/models.py:71)
Meta  # unused class (operator/jobarchive/storage/models.py:158)
Meta  # unused class (operator/jobarchive/storage/models.py:214)
Meta  # unused class (operator/jobarchive/storage/models.py:261)
Meta  # unused class (operator/jobarchive/storage/models.py:314)
unique_together  # unused variable (operator/jobarchive/storage/models.py:316)
gpu_seconds  # unused variable (operator/jobarchive/storage/models.py:329)
cpu_milli_seconds  # unused variable (operator/jobarchive/storage/models.py:330)
job_reason  # unused variable (operator/jobarchive/storage/models.py:341)
job_finished  # unused variable (operator/jobarchive/storage/models.py:343)
Meta  # unused class (operator/jobarchive/storage/models.py:345)
unique_together  # unused variable (operator/jobarchive/storage/models.py:347)
backend  # unused variable (operator/jobarchive/storage/readpool.py:96)
backend  # unused variable (operator/jobarchive/storage/readpool.py:136)
get_client_class  # unused function (operator/jobarchive/storage/readpool.py:183)
_.job_namespace  # unused method (operator/jobarchive/recording/attribution.py:239): the tests' view of what attribution knows
preemptions  # unused variable (operator/jobarchive/core/attempts.py:28): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
quota_wait_s  # unused variable (operator/jobarchive/core/attempts.py:29): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
start_wait_s  # unused variable (operator/jobarchive/core/attempts.py:30): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
requeue_wait_s  # unused variable (operator/jobarchive/core/attempts.py:31): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
attempt_id  # unused variable (operator/jobarchive/core/rows.py:183): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
workload_id  # unused variable (operator/jobarchive/core/rows.py:186): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
workload_name  # unused variable (operator/jobarchive/core/rows.py:187): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
cluster_queue  # unused variable (operator/jobarchive/core/rows.py:189): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
local_queue  # unused variable (operator/jobarchive/core/rows.py:190): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
quota_reserved_at  # unused variable (operator/jobarchive/core/rows.py:193): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
admitted_at  # unused variable (operator/jobarchive/core/rows.py:194): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
running_at  # unused variable (operator/jobarchive/core/rows.py:195): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
preemptor_workload_id  # unused variable (operator/jobarchive/core/rows.py:201): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
preemptor_job_id  # unused variable (operator/jobarchive/core/rows.py:202): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
requeues  # unused variable (operator/jobarchive/core/rows.py:205): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
wait_id  # unused variable (operator/jobarchive/core/rows.py:215): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
first_seen  # unused variable (operator/jobarchive/core/rows.py:223): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
last_seen  # unused variable (operator/jobarchive/core/rows.py:224): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
preempted_gpu_hours  # unused variable (operator/jobarchive/reading/queries/preemptions.py:34): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
evicted_gpu_hours  # unused variable (operator/jobarchive/reading/queries/preemptions.py:35): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
kueue_facts  # unused function (operator/jobarchive/reading/queries/preemptions.py:43): Kueue's attempts and waits, read by name (the rows are dicts); shown by the read side later, decision 43
quota_id  # unused variable (operator/jobarchive/core/rows.py:237): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
queue_id  # unused variable (operator/jobarchive/core/rows.py:239): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
borrowing_limit  # unused variable (operator/jobarchive/core/rows.py:245): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
lending_limit  # unused variable (operator/jobarchive/core/rows.py:246): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
valid_from  # unused variable (operator/jobarchive/core/rows.py:247): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
valid_until  # unused variable (operator/jobarchive/core/rows.py:248): a ClusterQueue's quota row, read by name (the rows are dicts), decision 44
# A job's efficiency figures, read through dataclasses.asdict (reading/queries/measured.py).
idle_gpu_hours  # unused variable (operator/jobarchive/core/efficiency.py)
unused_gpu_hours  # unused variable (operator/jobarchive/core/efficiency.py)
energy_kwh  # unused variable (operator/jobarchive/core/efficiency.py)
# The copies of a job's columns and its waits by cluster queue, read in SQL only (decision 46).
job_cluster  # unused variable (operator/jobarchive/storage/kueue.py)
first_reserved  # unused variable (operator/jobarchive/storage/kueue.py)
job_running  # unused variable (operator/jobarchive/storage/kueue.py)
gmt_measured  # unused variable (operator/jobarchive/core/rows.py:99): a column, written by SQL
gmt_measured  # unused variable (operator/jobarchive/storage/models.py:86): a model field
measured_gpu_s  # unused variable (operator/jobarchive/storage/models.py:277): a model field
active_gpu_s  # unused variable (operator/jobarchive/storage/models.py:278): a model field
unused_gpu_s  # unused variable (operator/jobarchive/storage/models.py:279): a model field
energy_j  # unused variable (operator/jobarchive/storage/models.py:280): a model field
measured_cpu_ms  # unused variable (operator/jobarchive/storage/models.py:281): a model field
used_cpu_ms  # unused variable (operator/jobarchive/storage/models.py:282): a model field
measured_mem_bs  # unused variable (operator/jobarchive/storage/models.py:283): a model field
peak_mem_bs  # unused variable (operator/jobarchive/storage/models.py:284): a model field
