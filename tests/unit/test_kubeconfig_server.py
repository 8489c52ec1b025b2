"""A kubeconfig's server URL, whatever it holds: taken as http or https, or refused in
one line (BadSetting) that shows no user information."""

import string

from hypothesis import given
from hypothesis import strategies as st

from jobarchive.cli.kubeconfig import _server_scheme
from jobarchive.cli.options import BadSetting

TEXT = st.text(string.printable + "é\u2028\x00", max_size=10)
SERVERS = st.builds(
    lambda scheme, password, host, port, rest: f"{scheme}://u:{password}@{host}:{port}{rest}",
    st.sampled_from(["https", "http", "HTTPS", "ftp", "", "https:"]),
    TEXT,
    st.one_of(TEXT, st.sampled_from(["127.0.0.1", "[::1]", "[::1", "archive"])),
    st.one_of(TEXT, st.integers(-1, 70000).map(str)),
    TEXT,
) | st.builds(
    lambda scheme, host, port, rest: f"{scheme}://{host}:{port}{rest}",
    st.sampled_from(["https", "http"]),
    st.one_of(TEXT, st.sampled_from(["127.0.0.1", "[::1]", "archive"])),
    st.one_of(TEXT, st.integers(-1, 70000).map(str)),
    TEXT,
)


@given(SERVERS)
def test_any_server_is_taken_as_http_or_https_or_refused_in_one_line(server: str) -> None:
    try:
        scheme = _server_scheme(server, "--kubeconfig k")
    except BadSetting as error:
        message = error.format_message()
        assert message.startswith("--kubeconfig k: the server ") and "\n" not in message
        secret = server.partition("://u:")[2].rpartition("@")[0]
        if len(secret) >= 3 and server.count(secret) == 1 and "@" in server.partition("/")[2]:
            assert f"u:{secret}@" not in message
        return
    assert scheme in ("http", "https")
    assert "@" not in server.partition("://")[2].partition("/")[0]
