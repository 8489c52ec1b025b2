"""The process-level infrastructure the wings stand on: the Kubernetes API client
(``cluster``), which cluster this is (``identity``) and which namespaces are served
(``scope``), the start's memory prediction (``sizing``), serving HTTP beside the operator
(``serving``, ``certificates``), Prometheus metrics (``metrics``), queries to a
Prometheus (``prometheus``) and what log lines may hold (``logs``). Below the wings and
above ``config`` and ``core`` (pyproject.toml's layers contract).
"""
