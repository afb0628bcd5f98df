"""Hostile config, policy and snapshot files: every one is a clear error naming the file
(exit 2 from the command line) or a valid result, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.sizes import EXAMPLES
from volsched.cache.errors import VolschedError
from volsched.daemon.cli.main import main
from volsched.daemon.cli.snapshot_files import load_snapshot
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.policy_file import load_policy_file
from volsched.scheduling.extender_config import parse_extenders

DEEP = "[" * 50_000 + "]" * 50_000
NODE = (
    "kind: Node\nmetadata: {name: small}\n"
    "status: {allocatable: {cpu: '2', memory: 4Gi, pods: '110'}}\n"
)


def pod_with(cpu: str) -> str:
    return (
        "---\nkind: Pod\nmetadata: {name: big, namespace: default}\n"
        f"spec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: {cpu!r}}}}}\n"
    )


@pytest.mark.parametrize(
    ("loader", "content", "error"),
    [
        (load_settings, b"http: " + DEEP.encode(), "nested"),
        (load_settings, b"\xff\xfe\x00", "not UTF-8"),
        (load_settings, b"http:\n  address: 1", "http.address: must be a non-empty string"),
        (load_policy_file, DEEP.encode(), "nested deeper than"),
        (load_policy_file, b'{"priorities": [{"weight": 1' + b"0" * 5000 + b"}]}", "number"),
        (load_policy_file, b"\xc3\x28", "not UTF-8"),
        (load_policy_file, b"[" + b"{}," * 5_000_000 + b"{}]", "MiB to decode, more than"),
        (lambda p: load_snapshot([p]), DEEP.encode(), "nested"),
        (lambda p: load_snapshot([p]), b"\x80abc", "UTF-8"),
        (lambda p: load_snapshot([p]), pod_with("1" * 5000).encode(), "longer than"),
        (
            lambda p: load_snapshot([p]),
            pod_with("-100").encode(),
            "resources.requests.cpu: must be greater than or equal to 0",
        ),
    ],
)
def test_hostile_files_are_one_error_naming_the_file(
    tmp_path: Path, loader: object, content: bytes, error: str
) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(VolschedError) as caught:
        loader(str(path))  # type: ignore[operator]
    message = str(caught.value)
    assert str(path) in message and error in message
    assert "\n" not in message


def test_negative_request_does_not_squeeze_a_pod_onto_a_small_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(NODE + pod_with("-100") + pod_with("50").replace("big", "bigger"))
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "must be greater than or equal to 0" in err and "Traceback" not in err


# Text a hostile or careless user might put in a YAML/JSON file.
yaml_text = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=True),
            st.text(max_size=20),
        ),
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(st.text(max_size=12), children, max_size=4),
        ),
        max_leaves=30,
    ).map(repr),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(content=st.one_of(yaml_text, st.binary(max_size=400).map(lambda b: b.decode("latin-1"))))
def test_any_file_is_a_result_or_one_clear_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "input.yaml"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    for loader in (
        lambda: load_settings(str(path), {}),
        lambda: load_policy_file(str(path)),
        lambda: load_snapshot([path]),
    ):
        try:
            loader()
        except VolschedError as exc:
            assert "\n" not in str(exc).strip()
            assert str(path) in str(exc)


EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "prioritizeVerb",
    "preemptVerb",
    "bindVerb",
    "weight",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
    "extra",
)
# A value of any YAML shape, and the few strings that mean something here.
field_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from(["http://x:1", "https://x:1/p", "5s", "0s", "-1s", "1m30s", "bind", "%"]),
    st.sampled_from(["example.com/gpu", "gpu", "a/b/c", "kubernetes.io/x", "Example.com/x"]),
    st.text(max_size=12),
    st.lists(
        st.dictionaries(
            st.sampled_from(["name", "ignoredByScheduler", "insecure", "caData", "x"]),
            st.one_of(st.booleans(), st.sampled_from(["example.com/gpu", "bad name", "QUFB"])),
            max_size=3,
        ),
        max_size=3,
    ),
    st.dictionaries(
        st.sampled_from(["insecure", "serverName", "caData", "certData", "caFile", "x"]),
        st.one_of(st.booleans(), st.text(max_size=8)),
        max_size=3,
    ),
)
extender_lists = st.one_of(
    field_value,
    st.lists(
        st.dictionaries(st.sampled_from(EXTENDER_FIELDS), field_value, max_size=6), max_size=3
    ),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(extenders=extender_lists)
def test_any_extenders_list_is_a_result_or_one_clear_error(extenders: object) -> None:
    """The ``extenders:`` of a KubeSchedulerConfiguration, whatever its shape."""
    try:
        parsed = parse_extenders(extenders, "sched.yaml")
    except VolschedError as exc:
        assert "\n" not in str(exc).strip()
        assert str(exc).startswith("sched.yaml: extenders")
    else:
        assert all(spec.url_prefix.startswith("http") for spec in parsed)
        assert sum(1 for spec in parsed if spec.bind_verb) <= 1
