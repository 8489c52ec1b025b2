"""The read side: the archive's queries (``queries``), served as the JSON API (``api``),
the aggregated API kubectl reads (``kube``) and the web console (``console``), behind
authentication and authorization (``auth``, ``frontproxy``, ``requestheader``, the
review budget ``ledger``) and fair admission (``gate``); ``fleet`` is the clusters'
grants. It only reads, and imports nothing of the write path or maintenance."""
