"""Why a container failed: the last lines of its log, read once when it terminates.

``triggers`` (pure: which containers of a pod body failed) -> ``intake`` (the caps,
what is set aside and why) -> ``queue`` (pure: one line per namespace, served in
turn) -> ``capture`` (the concurrency and rate limits; the rows handed to the one
writer, ``storage.writer``) -> ``fetcher`` (a GET on the pods/log subresource) ->
``text`` (pure: decoding and cutting); ``inserts`` says which tails exist.
"""
