"""Front-proxy authentication's pure rules: the ConfigMap read as Kubernetes writes it,
a client certificate judged against the current CA and allowed names, and the identity
the headers name, as Kubernetes' requestheader authenticator reads them."""

import datetime
import json
import pathlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from multidict import CIMultiDict

from jobarchive.config import ConfigError, load
from jobarchive.reading import requestheader
from jobarchive.reading.auth import Identity
from jobarchive.reading.requestheader import Ambiguous, BadConfig, RequestHeader
from tests.support.pki import Authority


def data(ca: Authority, **lists: list[str]) -> dict[str, str]:
    values = {
        "requestheader-allowed-names": ["front-proxy-client"],
        "requestheader-username-headers": ["X-Remote-User"],
        "requestheader-group-headers": ["X-Remote-Group"],
        "requestheader-extra-headers-prefix": ["X-Remote-Extra-"],
        **lists,
    }
    return {"requestheader-client-ca-file": ca.pem, **{k: json.dumps(v) for k, v in values.items()}}


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"), "front-proxy-ca")


def der(path: pathlib.Path) -> bytes:
    return x509.load_pem_x509_certificate(path.read_bytes()).public_bytes(
        serialization.Encoding.DER
    )


def test_the_configmap_gives_the_ca_the_names_and_the_headers(ca: Authority) -> None:
    config = requestheader.from_configmap(data(ca))
    assert config is not None
    assert config.allowed_names == ("front-proxy-client",)
    assert (config.username_headers, config.uid_headers) == (("X-Remote-User",), ())
    assert len(config.cas) == 1
    overridden = requestheader.from_configmap(data(ca), allowed_names=("aggregator",))
    assert overridden is not None and overridden.allowed_names == ("aggregator",)


def test_a_configmap_without_a_ca_believes_no_proxy(ca: Authority) -> None:
    without = {k: v for k, v in data(ca).items() if k != "requestheader-client-ca-file"}
    assert requestheader.from_configmap(without) is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("requestheader-allowed-names", "front-proxy-client", "allowed-names: not a JSON list"),
        ("requestheader-group-headers", '{"a": 1}', "group-headers: not a JSON list"),
        ("requestheader-extra-headers-prefix", "[1]", "prefix: not a JSON list of strings"),
        ("requestheader-username-headers", "[]", "username-headers: names no header"),
        ("requestheader-client-ca-file", "not a certificate", "not a PEM bundle"),
    ],
)
def test_a_configmap_that_cannot_be_used_is_refused_naming_its_key(
    ca: Authority, key: str, value: str, message: str
) -> None:
    with pytest.raises(BadConfig, match=message):
        requestheader.from_configmap({**data(ca), key: value})


def test_only_a_current_certificate_of_the_ca_with_an_allowed_name_is_the_proxys(
    ca: Authority, tmp_path: pathlib.Path
) -> None:
    config = requestheader.from_configmap(data(ca))
    assert config is not None
    proxy = der(ca.issue("front-proxy-client").cert)
    # Now, not at import: the certificates are valid from 5 minutes before they are made,
    # and a long suite collects this module longer ago than that.
    now = datetime.datetime.now(datetime.UTC)
    assert requestheader.proxy_name(proxy, config, now) == "front-proxy-client"
    assert requestheader.proxy_name(der(ca.issue("intruder").cert), config, now) is None
    rogue = Authority(tmp_path, "front-proxy-ca")
    assert (
        requestheader.proxy_name(der(rogue.issue("front-proxy-client").cert), config, now) is None
    )
    later = now + datetime.timedelta(days=3)
    assert requestheader.proxy_name(proxy, config, later) is None
    anyone = requestheader.from_configmap(data(ca), allowed_names=())
    assert anyone is not None
    assert requestheader.proxy_name(der(ca.issue("intruder").cert), anyone, now) == "intruder"
    assert requestheader.proxy_name(b"garbage", config, now) is None


def config_of(ca: Authority) -> RequestHeader:
    config = requestheader.from_configmap(
        data(ca, **{"requestheader-uid-headers": ["X-Remote-Uid"]})
    )
    assert config is not None
    return config


def test_the_headers_name_the_user_its_groups_uid_and_extra_as_kubernetes_reads_them(
    ca: Authority,
) -> None:
    headers = CIMultiDict(
        [
            ("x-remote-user", "carol"),
            ("X-Remote-Uid", "u-1"),
            ("X-Remote-Group", "ml-team-a"),
            ("X-Remote-Group", ""),
            ("X-Remote-Group", "system:authenticated"),
            ("X-Remote-Extra-Scopes", "read"),
            ("x-remote-extra-scopes", "write"),
            ("X-Remote-Extra-Acme.com%2FProject", "p1"),
            ("X-Remote-Extra-Bad%zz", "kept as written"),
        ]
    )
    assert requestheader.identity(headers, config_of(ca)) == Identity(
        username="carol",
        uid="u-1",
        groups=("ml-team-a", "system:authenticated"),
        extra=(
            ("acme.com/project", ("p1",)),
            ("bad%zz", ("kept as written",)),
            ("scopes", ("read", "write")),
        ),
    )


def test_no_user_is_nobody_and_two_users_are_refused(ca: Authority) -> None:
    config = config_of(ca)
    assert requestheader.identity(CIMultiDict([("X-Remote-Group", "admins")]), config) is None
    assert requestheader.identity(CIMultiDict([("X-Remote-User", "")]), config) is None
    for header in ("X-Remote-User", "X-Remote-Uid"):
        twice = CIMultiDict([("X-Remote-User", "bob"), (header, "x"), (header, "y")])
        with pytest.raises(Ambiguous, match=f"\\d {header} headers; send one"):
            requestheader.identity(twice, config)


def test_the_api_tls_variables_go_in_pairs_and_name_files(tmp_path: pathlib.Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_text("x")
    key.write_text("x")
    assert not load({}).api_tls.enabled
    pair = {"JOBARCHIVE_API_TLS_CERT_FILE": str(cert), "JOBARCHIVE_API_TLS_KEY_FILE": str(key)}
    assert load(pair).api_tls.enabled
    assert load({"JOBARCHIVE_API_TLS_SELF_SIGNED": "true"}).api_tls.self_signed
    names = load({"JOBARCHIVE_REQUESTHEADER_ALLOWED_NAMES": "a, b"}).api_tls.allowed_names
    assert names == ("a", "b")
    refused = {
        "JOBARCHIVE_API_TLS_KEY_FILE: not set, but JOBARCHIVE_API_TLS_CERT_FILE is": {
            "JOBARCHIVE_API_TLS_CERT_FILE": str(cert)
        },
        "JOBARCHIVE_API_TLS_CERT_FILE: not set, but JOBARCHIVE_API_TLS_KEY_FILE is": {
            "JOBARCHIVE_API_TLS_KEY_FILE": str(key)
        },
        "JOBARCHIVE_API_TLS_CERT_FILE: '/nowhere' is not a file": {
            **pair,
            "JOBARCHIVE_API_TLS_CERT_FILE": "/nowhere",
        },
        "JOBARCHIVE_API_TLS_SELF_SIGNED: true, but": {
            **pair,
            "JOBARCHIVE_API_TLS_SELF_SIGNED": "true",
        },
        "JOBARCHIVE_API_TLS_SELF_SIGNED: 'yes' is not true or false": {
            "JOBARCHIVE_API_TLS_SELF_SIGNED": "yes"
        },
        "JOBARCHIVE_REQUESTHEADER_CLIENT_CA_FILE: '/nowhere' is not a file": {
            "JOBARCHIVE_REQUESTHEADER_CLIENT_CA_FILE": "/nowhere"
        },
        "JOBARCHIVE_REQUESTHEADER_ALLOWED_NAMES: 'a,,b' has an empty name": {
            "JOBARCHIVE_REQUESTHEADER_ALLOWED_NAMES": "a,,b"
        },
    }
    for message, env in refused.items():
        with pytest.raises(ConfigError) as error:
            load(env)
        assert str(error.value).startswith(message), str(error.value)
