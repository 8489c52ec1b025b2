"""Why a container failed: the last lines of its log, read once when it terminates.

``triggers`` (pure: which containers of a pod body failed) -> ``capture`` (the
bounded queue, the concurrency and rate limits) -> ``fetcher`` (a GET on the
pods/log subresource) -> ``text`` (pure: decoding and cutting) -> ``store`` (the
``container_log_tail`` rows, written once each).
"""
