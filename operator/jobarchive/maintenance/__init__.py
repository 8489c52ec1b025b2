"""Maintenance that the operator runs beside recording: reconciliation with the cluster
(missed deletes), retention, and which replica is active in Kopf's peering."""
