"""The ``extenders:`` list: upstream's fields, defaults, validation and error wording
(pkg/scheduler/apis/config/validation: validateExtenders), and the managed resources
NodeResourcesFit leaves alone."""

from __future__ import annotations

import base64

import pytest
import yaml

from volsched.cache.errors import ConfigError
from volsched.cache.objects.core import parse_pod
from volsched.scheduling.extender_config import (
    DEFAULT_HTTP_TIMEOUT_SECONDS,
    ExtenderSpec,
    ManagedResource,
    TLSSpec,
    ignored_by_scheduler,
    parse_extenders,
    with_ignored_resources,
)
from volsched.scheduling.scheduler_config import default_profile, parse_scheduler_configuration

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def parse(text: str) -> tuple[ExtenderSpec, ...]:
    return parse_extenders(yaml.safe_load(text), "sched.yaml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[]", ()),
        ("null", ()),
        (
            "[{urlPrefix: 'http://127.0.0.1:8888/scheduler'}]",
            (ExtenderSpec("http://127.0.0.1:8888/scheduler"),),
        ),
        (
            """
- urlPrefix: https://topolvm-scheduler:9251
  filterVerb: predicate
  prioritizeVerb: prioritize
  preemptVerb: preempt
  bindVerb: bind
  weight: 3
  enableHTTPS: true
  nodeCacheCapable: true
  ignorable: true
  httpTimeout: 1m30s
  managedResources:
  - {name: topolvm.io/capacity, ignoredByScheduler: true}
  - {name: example.com/gpu}
""",
            (
                ExtenderSpec(
                    "https://topolvm-scheduler:9251",
                    filter_verb="predicate",
                    preempt_verb="preempt",
                    prioritize_verb="prioritize",
                    bind_verb="bind",
                    weight=3,
                    enable_https=True,
                    http_timeout_seconds=90.0,
                    node_cache_capable=True,
                    managed_resources=(
                        ManagedResource("topolvm.io/capacity", True),
                        ManagedResource("example.com/gpu", False),
                    ),
                    ignorable=True,
                ),
            ),
        ),
        # Upstream's NewHTTPExtender: a zero timeout is the 5 s default.
        (
            "[{urlPrefix: 'http://x:1', httpTimeout: 0s}]",
            (ExtenderSpec("http://x:1", http_timeout_seconds=DEFAULT_HTTP_TIMEOUT_SECONDS),),
        ),
        (
            "[{urlPrefix: 'http://x:1', httpTimeout: 250ms}]",
            (ExtenderSpec("http://x:1", http_timeout_seconds=0.25),),
        ),
        # A weight without a prioritize verb is not checked (upstream neither).
        ("[{urlPrefix: 'http://x:1', weight: 0}]", (ExtenderSpec("http://x:1"),)),
        (
            f"[{{urlPrefix: 'https://x:1', tlsConfig: {{insecure: false, serverName: ext, "
            f"caData: {base64.b64encode(PEM).decode()}, certFile: /c.pem, keyFile: /k.pem}}}}]",
            (
                ExtenderSpec(
                    "https://x:1",
                    tls=TLSSpec(
                        server_name="ext",
                        ca_data=PEM,
                        cert_file="/c.pem",
                        key_file="/k.pem",
                    ),
                ),
            ),
        ),
    ],
)
def test_fields_and_defaults(text: str, expected: tuple[ExtenderSpec, ...]) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[{urlPrefix: 'http://x:1', prioritizeVerb: prioritize}]",
            "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        ),
        (
            "[{urlPrefix: 'http://x:1', prioritizeVerb: p, weight: -2}]",
            "extenders[0].weight: Invalid value: -2: must have a positive weight applied to it",
        ),
        (
            "[{urlPrefix: 'http://a:1', bindVerb: bind}, {urlPrefix: 'http://b:1', bindVerb: b}]",
            'extenders: Invalid value: "found 2 extenders implementing bind": '
            "only one extender can implement bind",
        ),
        (
            "[{urlPrefix: 'http://x:1', managedResources: [{name: gpu}]}]",
            'extenders[0].managedResources[0].name: Invalid value: "gpu": '
            "is an invalid extended resource name",
        ),
        (
            "[{urlPrefix: 'http://x:1', managedResources: [{name: kubernetes.io/gpu}]}]",
            'Invalid value: "kubernetes.io/gpu": is an invalid extended resource name',
        ),
        (
            "[{urlPrefix: 'http://x:1', managedResources: [{name: Example.com/gpu}]}]",
            'extenders[0].managedResources[0].name: Invalid value: "Example.com/gpu": '
            "prefix part a lowercase RFC 1123 subdomain must consist of",
        ),
        (
            "[{urlPrefix: 'http://x:1', managedResources: [{name: example.com/-gpu}]}]",
            'Invalid value: "example.com/-gpu": name part must consist of alphanumeric',
        ),
        (
            "[{urlPrefix: 'http://x:1', managedResources: [{name: a/b/c}]}]",
            'Invalid value: "a/b/c": a qualified name must consist of',
        ),
        (
            "[{urlPrefix: 'http://a:1', managedResources: [{name: example.com/gpu}]},"
            " {urlPrefix: 'http://b:1', managedResources: [{name: example.com/gpu}]}]",
            'extenders[1].managedResources[0].name: Invalid value: "example.com/gpu": '
            "duplicate extender managed resource name",
        ),
        (
            "[{filterVerb: filter}]",
            'extenders[0].urlPrefix: must be an http:// or https:// URL, not ""',
        ),
        (
            "[{urlPrefix: 'unix:///run/x'}]",
            "extenders[0].urlPrefix: must be an http:// or https://",
        ),
        (
            "[{urlPrefix: 'http://x:1', httpTimeout: soon}]",
            'httpTimeout: must be a duration such as 5s, not "soon"',
        ),
        (
            "[{urlPrefix: 'http://x:1', httpTimeout: 5}]",
            "httpTimeout: must be a duration such as 5s, not 5",
        ),
        (
            "[{urlPrefix: 'http://x:1', weight: two}]",
            'extenders[0].weight: must be an integer, not "two"',
        ),
        (
            "[{urlPrefix: 'http://x:1', ignorable: yes please}]",
            "extenders[0].ignorable: must be true or false",
        ),
        (
            "[{urlPrefix: 'http://x:1', tlsConfig: {caData: '%%%'}}]",
            "tlsConfig.caData: must be base64-encoded PEM data",
        ),
        (
            "[{urlPrefix: 'http://x:1', tlsConfig: {ca: x}}]",
            "extenders[0].tlsConfig.ca: unknown field",
        ),
        ("[{urlPrefix: 'http://x:1', verb: x}]", "extenders[0].verb: unknown field"),
        (
            "[{urlPrefix: 'https://x:1', tlsConfig: {insecure: true, caFile: /ca.pem}}]",
            "extenders[0].tlsConfig: specifying a root certificates file with the insecure flag",
        ),
        ("{urlPrefix: 'http://x:1'}", "sched.yaml: extenders: must be a list"),
        (
            "[{urlPrefix: 'http://x:1', managedResources: {name: a}}]",
            "managedResources: must be a list",
        ),
    ],
)
def test_mistakes_are_one_error_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse(text)
    assert str(error.value).startswith("sched.yaml: ")
    assert message in str(error.value)


def test_the_configuration_carries_its_extenders() -> None:
    config = parse_scheduler_configuration(
        yaml.safe_load(HEAD + "extenders: [{urlPrefix: 'http://x:1', filterVerb: filter}]"),
        "sched.yaml",
    )
    assert config.extenders == (ExtenderSpec("http://x:1", filter_verb="filter"),)
    assert len(config.profiles) == 1


@pytest.mark.parametrize(
    ("managed", "container_resources", "interested"),
    [
        ((), {}, True),
        ((ManagedResource("example.com/gpu"),), {}, False),
        ((ManagedResource("example.com/gpu"),), {"requests": {"example.com/gpu": "1"}}, True),
        ((ManagedResource("example.com/gpu"),), {"limits": {"example.com/gpu": "1"}}, True),
        ((ManagedResource("example.com/gpu"),), {"requests": {"example.com/fpga": "1"}}, False),
    ],
)
def test_interest_follows_the_managed_resources(
    managed: tuple[ManagedResource, ...], container_resources: dict[str, object], interested: bool
) -> None:
    pod = parse_pod(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": [{"name": "c", "resources": container_resources}]},
        }
    )
    assert ExtenderSpec("http://x:1", managed_resources=managed).is_interested(pod) is interested


def test_resources_ignored_by_the_scheduler_replace_the_fit_plugins_list() -> None:
    extenders = parse(
        "[{urlPrefix: 'http://a:1', managedResources: [{name: example.com/gpu, ignoredByScheduler: true},"
        " {name: example.com/fpga}]}]"
    )
    names = ignored_by_scheduler(extenders)
    assert names == ("example.com/gpu",)
    policy = default_profile(with_storage=False).policy
    ignored = with_ignored_resources(policy, names)
    fit = [spec for spec in ignored.predicates if spec.name == "NodeResourcesFit"]
    assert [spec.argument["ignoredResources"] for spec in fit] == [("example.com/gpu",)]
    assert with_ignored_resources(policy, ()) is policy
