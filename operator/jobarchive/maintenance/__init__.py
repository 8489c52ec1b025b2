"""Maintenance that the operator runs beside recording: reconciliation with the cluster
(missed deletes), retention, failed jobs' classes (``classifying``, decision 42), and
which replica is active in Kopf's peering."""
