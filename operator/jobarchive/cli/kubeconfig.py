"""The kubeconfig the read commands go through the API with, checked before anything
is loaded from it: where it is, its server a usable URL, and credentials only over TLS.

client-go reads a kubeconfig's credentials only for an ``https://`` server and drops
them silently for an ``http://`` one; the Kubernetes client for Python sends them
anyway, in clear text. jobarchive does neither: a context whose server is
``http://`` and whose user holds a token, a token file, an exec plugin, an auth
provider or a user name and password is refused in one line (exit status 2) naming
the server and the field, before any plugin runs or any byte is sent. A user without
credentials may use ``http://`` (``kubectl proxy``). A server URL that is not one
(no host, a port out of range, user information, a query, spaces) is refused alike,
its user information never shown.
"""

import os
import urllib.parse
from typing import Any

from kubernetes_asyncio.config.kube_config import (
    ENV_KUBECONFIG_PATH_SEPARATOR,
    KUBE_CONFIG_DEFAULT_LOCATION,
    KubeConfigMerger,
)

from jobarchive.cli.archive import Kubeconfig
from jobarchive.cli.options import BadSetting
from jobarchive.core.visible import visible

# The fields of a kubeconfig's user that put a credential in a request's headers
# (a client certificate is presented only in a TLS handshake).
CREDENTIALS = ("token", "tokenFile", "exec", "auth-provider", "username", "password")


def locate(given: Kubeconfig) -> tuple[str, str]:
    """Where the kubeconfig is, and how messages name it; BadSetting when no such file
    exists (the library would only log a warning, then fail vaguely)."""
    location = given.path or KUBE_CONFIG_DEFAULT_LOCATION
    source = f"--kubeconfig {location}" if given.path else f"the kubeconfig {location}"
    if given.context:
        source += f" (context {given.context})"
    paths = [os.path.expanduser(path) for path in location.split(ENV_KUBECONFIG_PATH_SEPARATOR)]
    if not any(os.path.isfile(path) for path in paths if path):
        raise BadSetting(visible(f"{source}: no such file"))
    return location, source


def check(location: str, context: str | None, source: str) -> None:
    """Refuse the context's server when it is not a usable URL, or is ``http://`` while
    its user holds a credential (BadSetting, one line). A file the library cannot read,
    or a context it cannot find, is left for its loader to say."""
    try:
        merged: Any = KubeConfigMerger(location).config
        chosen = context or merged["current-context"]
        named = merged["contexts"].get_with_name(chosen)["context"]
        cluster = merged["clusters"].get_with_name(named["cluster"])["cluster"].value
        user_name = named.safe_get("user")
        found = merged["users"].get_with_name(user_name, safe=True) if user_name else None
        user = found["user"].value if found and found.safe_get("user") else {}
    except Exception:
        return
    server = cluster.get("server")
    if isinstance(server, str):
        scheme = _server_scheme(server, source)
        held = [field for field in CREDENTIALS if _given(user, field)]
        if scheme == "http" and held:
            raise BadSetting(
                visible(
                    f"{source}: the server {server} is http://, and the user {user_name!r} "
                    f"holds a {held[0]}: credentials go only over TLS (client-go drops them "
                    "for an http:// server; jobarchive refuses): use its https:// address, "
                    "or a user without credentials (kubectl proxy)"
                )
            )


def _given(user: dict[str, Any], field: str) -> bool:
    return field in user and user[field] not in (None, "", {})


def _server_scheme(server: str, source: str) -> str:
    """The server URL's scheme, lowercase; BadSetting for a URL that is not one."""
    shown = _without_userinfo(server) or "''"

    def refused(why: str) -> BadSetting:
        return BadSetting(visible(f"{source}: the server {shown} {why}"))

    if "@" in server:
        raise refused("holds a user name or password: put credentials in the kubeconfig's user")
    if server != server.strip() or any(char.isspace() or not char.isprintable() for char in server):
        raise refused("holds a space or a control character")
    try:
        parts = urllib.parse.urlsplit(server)
        parts.port  # noqa: B018 -- urllib checks the port only when it is read
    except ValueError:
        raise refused("is not a URL (expected https://host:port)") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise refused("is not an https:// (or http://) URL")
    if not parts.hostname:
        raise refused("names no host")
    if parts.query or parts.fragment or "?" in server or "#" in server:
        raise refused("holds a query or a fragment, which an API server's address has not")
    return scheme


def _without_userinfo(server: str) -> str:
    """The server as it may be shown: all before its last ``@`` but the scheme replaced
    by ``***`` (a password holding ``/``, ``?`` or ``#`` would end the authority early,
    so the authority alone is not what to mask)."""
    if "@" not in server:
        return server
    scheme, separator, rest = server.partition("://")
    return scheme + separator + "***@" + rest.rpartition("@")[2]
