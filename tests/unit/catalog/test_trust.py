"""The trust set: origins parsed once into one canonical form, built from the user's settings only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyspark_catalog_ext.catalog.trust import Origin, TrustedOrigins
from pyspark_catalog_ext.errors import ConfigError, UntrustedOriginError


@pytest.mark.parametrize(("url", "canonical"), [
    ("https://Catalog.Example.com/api/catalog", "https://catalog.example.com:443"),
    ("HTTPS://catalog.example.com:443", "https://catalog.example.com:443"),
    ("http://catalog.example.com.", "http://catalog.example.com:80"),
    ("http://127.0.0.1:8181/x?y=1#z", "http://127.0.0.1:8181"),
    ("http://[0:0:0:0:0:0:0:1]:9000", "http://[::1]:9000"),
    ("http://[::1]:9000", "http://[::1]:9000"),
    ("https://XN--bcher-kva.example/x", "https://xn--bcher-kva.example:443"),  # non-ASCII: refused (trust-rules.json)
])
def test_one_origin_has_one_spelling(url: str, canonical: str) -> None:
    assert str(Origin.of(url)) == canonical


@pytest.mark.parametrize("url", ["ftp://host/x", "//host/x", "/v1/x", "https://", "https://user:pw@host/", "https://tok@host/",
                                 "https://host:99999/", "file:///etc/passwd", "https://host:port/"])
def test_what_is_not_an_http_origin_is_refused(url: str) -> None:
    with pytest.raises(ValueError) as info:
        Origin.of(url)
    assert "pw" not in str(info.value) and "tok" not in str(info.value) and "\n" not in str(info.value)


def test_the_set_comes_from_the_users_url_settings_and_the_knob() -> None:
    trust = TrustedOrigins.from_user_properties({
        "uri": "https://cat.example.com/api/catalog", "oauth2-server-uri": "https://idp.example.com/token",
        "catalog-ext.trusted-origins": " https://signer.example.com:8443 , http://10.0.0.1:81",
        "s3.endpoint": "https://s3.example.com"})  # not a credential destination
    assert trust.allows("https://CAT.example.com:443/v1/config")
    assert trust.allows("https://idp.example.com/other")
    assert trust.allows("https://signer.example.com:8443/sign")
    assert trust.allows("http://10.0.0.1:81")
    for other in ("https://s3.example.com/x", "http://cat.example.com/v1", "https://cat.example.com:8443/",
                  "https://evil.example.com/", "https://cat.example.com.evil.example/", "https://x@cat.example.com/"):
        assert not trust.allows(other), other


def test_a_refusal_is_one_line_naming_the_key_and_the_origin() -> None:
    trust = TrustedOrigins.from_user_properties({"uri": "https://cat.example.com"})
    with pytest.raises(UntrustedOriginError) as info:
        trust.check("https://evil.example.com:444/sign?token=s3cr3t", key="s3.signer.endpoint")
    message = str(info.value)
    assert "https://evil.example.com:444" in message and "s3.signer.endpoint" in message and "catalog-ext.trusted-origins" in message
    assert "s3cr3t" not in message and "\n" not in message
    assert info.value.origin == "https://evil.example.com:444" and info.value.key == "s3.signer.endpoint"
    assert trust.check("https://cat.example.com/v1/config") == Origin("https", "cat.example.com", 443)


def test_bad_user_settings_are_one_line_config_errors() -> None:
    with pytest.raises(ConfigError, match="^catalog-ext.trusted-origins: not an http"):
        TrustedOrigins.from_user_properties({"uri": "https://cat.example.com", "catalog-ext.trusted-origins": "ftp://x"})
    with pytest.raises(ConfigError, match="needs a uri"):
        TrustedOrigins.from_user_properties({})


@given(st.text(max_size=60))
def test_any_string_is_trusted_only_if_it_parses_to_a_member(text: str) -> None:
    trust = TrustedOrigins.from_user_properties({"uri": "https://cat.example.com"})
    try:
        parsed = Origin.of(text)
    except ValueError:
        assert not trust.allows(text)
        return
    assert trust.allows(text) == (parsed == Origin("https", "cat.example.com", 443))
