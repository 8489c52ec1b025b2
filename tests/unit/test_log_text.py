"""How a tail is cut and decoded, and the rate limit of the reads."""

import pytest

from jobarchive.logtails.capture import TokenBucket
from jobarchive.logtails.text import tail


def test_the_last_lines_are_kept() -> None:
    data = b"".join(f"step {i}\n".encode() for i in range(10))
    assert tail(data, 3, 1000).text == "step 7\nstep 8\nstep 9\n"
    assert tail(data, 3, 1000).truncated
    assert tail(data, 10, 1000).text == data.decode()
    assert not tail(data, 10, 1000).truncated


def test_over_the_byte_limit_the_end_is_kept_from_a_line_boundary() -> None:
    data = b"first line\nsecond line\nTraceback: CUDA out of memory\n"
    cut = tail(data, 100, 40)
    assert cut.text == "Traceback: CUDA out of memory\n"
    assert cut.truncated


def test_a_single_line_longer_than_the_limit_keeps_its_end() -> None:
    cut = tail(b"x" * 100 + b"END", 10, 10)
    assert cut.text == "xxxxxxxEND"


def test_invalid_utf8_is_replaced_not_refused() -> None:
    cut = tail(b"ok \xff\xfe bytes\n\xe2\x82", 10, 1000)
    assert cut.text == "ok \ufffd\ufffd bytes\n\ufffd"


def test_a_log_without_a_final_newline_and_an_empty_log() -> None:
    assert tail(b"a\nb\nc", 2, 100).text == "b\nc"
    assert tail(b"", 2, 100).text == ""
    assert not tail(b"", 2, 100).truncated


def test_an_answer_the_server_cut_is_marked_truncated() -> None:
    assert tail(b"a\nb\n", 10, 100, incomplete=True).truncated


def test_the_token_bucket_allows_a_burst_then_the_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=10, burst=2, clock=lambda: now[0])
    assert [bucket.delay() for _ in range(2)] == [0.0, 0.0]
    assert bucket.delay() == pytest.approx(0.1)
    now[0] += 0.1
    assert bucket.delay() == 0.0
    assert bucket.delay() == pytest.approx(0.1)
    now[0] += 10
    # However long the pause, no more than the burst at once.
    assert [bucket.delay() for _ in range(3)][:2] == [0.0, 0.0]
