"""The settings tree: HTTP listening, authentication and the extender's served schedulers;
each mistake is one error naming the file and the key."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.cache.errors import ConfigError
from volsched.daemon.config.loading import settings_from_data


def test_defaults_are_authenticated_https_on_loopback() -> None:
    settings = settings_from_data({}, "c.yaml")
    assert settings.http.address == "127.0.0.1:10351"
    assert settings.http.authentication.enabled
    assert settings.extender_scheduler_names == ("default-scheduler",)


def test_the_webhooks_claim_reads_have_a_deadline() -> None:
    assert settings_from_data({}, "c.yaml").webhook.lookup_timeout_seconds == 1.5
    data = {"webhook": {"lookupTimeoutSeconds": 4}}
    assert settings_from_data(data, "c.yaml").webhook.lookup_timeout_seconds == 4.0


@pytest.mark.parametrize(
    "address", ["127.0.0.1:0", "[::1]:10351", "localhost:10351", "127.0.0.2:1"]
)
def test_authentication_may_be_off_on_loopback(address: str) -> None:
    data = {"http": {"address": address, "authentication": {"enabled": False}}}
    assert not settings_from_data(data, "c.yaml").http.authentication.enabled


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"http": {"address": "0.0.0.0:10351", "authentication": {"enabled": False}}},
            "c.yaml: http.authentication.enabled: may be false only when http.address is a "
            "loopback address, not 0.0.0.0:10351",
        ),
        (
            {"http": {"address": "volsched.example:1", "authentication": {"enabled": False}}},
            "c.yaml: http.authentication.enabled: may be false only when",
        ),
        ({"http": {"address": "10351"}}, "c.yaml: http.address: must be HOST:PORT"),
        ({"http": {"address": "h:x1"}}, "c.yaml: http.address: port must be a number, not 'x1'"),
        ({"http": {"address": "h:65536"}}, "c.yaml: http.address: port must be between 0 and"),
        ({"http": {"address": "[::1:80"}}, "c.yaml: http.address: unbalanced brackets"),
        (
            {"http": {"authentication": {"certFile": "/a.crt"}}},
            "c.yaml: http.authentication.keyFile: give both or neither",
        ),
        (
            {"http": {"authentication": {"enabled": "no"}}},
            "c.yaml: http.authentication.enabled: must be true or false",
        ),
        (
            {"http": {"authentication": {"token": "x"}}},
            "c.yaml: http.authentication.token: unknown key",
        ),
        ({"http": {"maxConnections": 0}}, "c.yaml: http.maxConnections: must be between 1"),
        (
            {"http": {"headerTimeoutSeconds": 0}},
            "c.yaml: http.headerTimeoutSeconds: must be between 0.1",
        ),
        (
            {"extender": {"schedulerNames": "volsched"}},
            "c.yaml: extender.schedulerNames: must be a list",
        ),
        ({"extender": {"schedulerNames": [""]}}, "c.yaml: extender.schedulerNames: must be a list"),
        (
            {"webhook": {"lookupTimeoutSeconds": 30}},
            "c.yaml: webhook.lookupTimeoutSeconds: must be between 0.1 and 15, not 30",
        ),
    ],
)
def test_each_mistake_is_one_error_naming_the_key(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_data(data, "c.yaml")
    assert str(caught.value).startswith(message)
