"""The reproductions of "No input stops the scheduler", each kept as a test: every one
ends as exit status 2 and one line on stderr naming the file (and document, field) —
no traceback, no hang — or, for what upstream accepts, as a decision."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from volsched.daemon.cli.main import main
from volsched.emulator import write_kubeconfig

BIG = "1" * 5000  # past Python's 4,300-digit limit for int()
WIDE = "9" * 400  # past a float's range (about 309 digits)

NODE = (
    "kind: Node\nmetadata: {name: n, labels: {kubernetes.io/hostname: n}}\n"
    "status: {allocatable: {cpu: '4', memory: 4Gi, pods: '110'}}\n"
)


def pod(spec: str = "", requests: str = "cpu: '1'", metadata: str = "") -> str:
    return (
        f"---\nkind: Pod\nmetadata: {{name: p, namespace: default, labels: {{app: a}}{metadata}}}\n"
        f"spec:\n  containers:\n  - name: c\n    resources: {{requests: {{{requests}}}}}\n{spec}"
    )


def one_line(capsys: pytest.CaptureFixture[str], status: int, *expected: str) -> str:
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def simulate(*args: str) -> int:
    started = time.monotonic()
    status = main(["simulate", *args, "-o", "json"])
    assert time.monotonic() - started < 5
    return status


# -- 5. numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshot", "where"),
    [
        (NODE + pod(requests=f"cpu: {BIG}"), "line 10"),
        (NODE + pod(spec=f"  priority: {BIG}\n"), "line 11"),
        (NODE.replace("cpu: '4'", f"cpu: {BIG}"), "line 3"),
    ],
    ids=["quantity", "priority", "allocatable"],
)
def test_integers_of_thousands_of_digits_in_a_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snapshot: str, where: str
) -> None:
    path = write(tmp_path, "s.yaml", snapshot)
    one_line(capsys, simulate(path), path, "a number longer than 64 characters", where)


@pytest.mark.parametrize(
    "config",
    [
        f"parallelism: {BIG}\n",
        "---\napiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"profiles:\n- plugins:\n    score:\n      enabled:\n      - {{name: NodeAffinity, weight: {BIG}}}\n",
        f"backoff: {{initialSeconds: {BIG}}}\n",
    ],
    ids=["parallelism", "plugin weight", "backoff"],
)
def test_integers_of_thousands_of_digits_in_a_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    path = write(tmp_path, "c.yaml", config)
    status = simulate(write(tmp_path, "s.yaml", NODE), "--config", path)
    one_line(capsys, status, path, "a number longer than 64 characters")


def test_integers_of_thousands_of_digits_in_a_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = f'{{"kind": "Policy", "priorities": [{{"name": "LeastRequestedPriority", "weight": {BIG}}}]}}'
    path = write(tmp_path, "p.json", policy)
    status = simulate(write(tmp_path, "s.yaml", NODE), "--policy", path)
    one_line(capsys, status, path, "a number longer than 64 characters")


def test_integers_of_thousands_of_digits_in_a_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = write(tmp_path, "kubeconfig", f"clusters: []\ncurrent-context: {BIG}\n")
    status = main(["run", "--kubeconfig", kubeconfig, "--database", str(tmp_path / "v.db")])
    one_line(capsys, status, kubeconfig, "a number longer than 64 characters")
    assert not (tmp_path / "v.db").exists()


@pytest.mark.parametrize(
    "snapshot",
    [
        NODE.replace("cpu: '4'", f"cpu: {WIDE}") + pod(),
        NODE.replace("cpu: '4'", "cpu: '1e400'") + pod(),
        NODE.replace("cpu: '4'", "cpu: 1.0e+300") + pod(),
        NODE
        + pod(
            spec="  topologySpreadConstraints:\n  - {maxSkew: 99999999999, topologyKey: zone,"
            " whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: a}}}\n"
        ),
    ],
    ids=["400-digit allocatable", "1e400 allocatable", "1e300 float", "maxSkew past int32"],
)
def test_numbers_past_what_upstream_holds_are_refused_before_any_float(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snapshot: str
) -> None:
    path = write(tmp_path, "s.yaml", snapshot)
    one_line(capsys, simulate(path), path)


def test_the_largest_numbers_upstream_holds_are_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """int64 quantities through NodeResourcesBalancedAllocation (``_balanced``) and an
    int32 maxSkew through PodTopologySpread's score: decided, never an overflow."""
    most = str(2**63 - 1)
    snapshot = NODE.replace("cpu: '4'", f"cpu: '{most}'").replace("4Gi", f"'{most}'") + pod(
        requests=f"cpu: '{most}', memory: '{most}'",
        spec="  topologySpreadConstraints:\n  - {maxSkew: 2147483647, topologyKey: zone,"
        " whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: a}}}\n",
    )
    status = simulate(write(tmp_path, "s.yaml", snapshot))
    out = capsys.readouterr().out
    assert status == 0
    assert json.loads(out)["pods"][0]["node"] == "n"


# -- 5. times, keys, overhead ----------------------------------------------------------


@pytest.mark.parametrize(
    "stamp",
    ["0001-01-01 00:00:00", "0001-01-01", "0000-01-01T00:00:00Z", "2023-02-30T00:00:00Z"],
)
def test_timestamps_the_api_server_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stamp: str
) -> None:
    path = write(tmp_path, "s.yaml", NODE + pod(metadata=f", creationTimestamp: {stamp}"))
    one_line(capsys, simulate(path), path, "metadata.creationTimestamp")


def test_unknown_config_keys_of_mixed_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "c.yaml", "1: a\nzebra: b\nnull: c\n2.5: d\nhttp: {3: x, y: z}\n")
    status = simulate(write(tmp_path, "s.yaml", NODE), "--config", path)
    one_line(capsys, status, path, "unknown key")


def test_a_negative_overhead_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A 5-CPU pod with overhead -4 would otherwise fit a 4-CPU node.
    snapshot = NODE + pod(requests="cpu: '5'", spec="  overhead: {cpu: '-4'}\n")
    path = write(tmp_path, "s.yaml", snapshot)
    one_line(capsys, simulate(path), path, "spec.overhead.cpu: must be greater than or equal to 0")


def test_the_alias_bomb_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]" for n in range(1, 10)]
    path = write(tmp_path, "s.yaml", "\n".join(lines) + "\n")
    started = time.monotonic()
    status = simulate(path)
    assert time.monotonic() - started < 1
    one_line(capsys, status, path, "aliases expand to more than")


# -- 5. the kubeconfig -----------------------------------------------------------------


def kubeconfig_with(tmp_path: Path, cluster: dict[str, object]) -> str:
    path = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    data = yaml.safe_load(path.read_text())
    data["clusters"][0]["cluster"] = cluster
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize(
    ("cluster", "problem"),
    [
        ({}, "cluster.server: is required"),
        ({"server": "gopher://x"}, "'gopher://x' is not an http or https URL"),
        ({"server": "https://x:99999"}, "the port must be a number between 1 and 65535"),
        ({"server": 5}, "must be a URL, not int"),
        (
            {"server": "https://x", "certificate-authority-data": "!!!garbage"},
            "certificate-authority-data: not base64",
        ),
        (
            {"server": "https://x", "certificate-authority-data": "aGVsbG8="},
            "certificate-authority-data: not a PEM certificate",
        ),
    ],
    ids=["no server", "gopher", "port", "server not text", "CA not base64", "CA not PEM"],
)
def test_a_kubeconfig_volsched_cannot_use_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: dict[str, object], problem: str
) -> None:
    kubeconfig = kubeconfig_with(tmp_path, cluster)
    status = main(["run", "--kubeconfig", kubeconfig, "--database", str(tmp_path / "v.db")])
    one_line(capsys, status, kubeconfig, problem)
    assert not (tmp_path / "v.db").exists()


# -- 5. --http-address and VOLSCHED_HTTP_ADDRESS ----------------------------------------


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1:99999", "port must be between 0 and 65535"),
        ("127.0.0.1:http", "port must be a number"),
        ("127.0.0.1:" + "1" * 5000, "port must be between 0 and 65535"),
        ("[::1:80", "unbalanced brackets"),
        ("[::1]x:80", "unbalanced brackets"),
        ("[nope]:80", "'[nope]' is not an IPv6 address"),
        ("::1:80", "an IPv6 host goes in brackets"),
        ("127.0.0.1:٨٠", "port must be a number"),
        ("127.0.0.1:８０", "port must be a number"),
        ("", "must be HOST:PORT"),
    ],
)
@pytest.mark.parametrize("source", ["flag", "environment"])
def test_a_bad_http_address_is_refused_before_anything_opens(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    address: str,
    problem: str,
    source: str,
) -> None:
    database = tmp_path / "v.db"
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1"))
    args = ["run", "--kubeconfig", kubeconfig, "--database", str(database)]
    if source == "flag":
        args += ["--http-address", address]
        where = "--http-address"
    else:
        if not address:
            pytest.skip("an empty variable is an unset one")
        monkeypatch.setenv("VOLSCHED_HTTP_ADDRESS", address)
        where = "VOLSCHED_HTTP_ADDRESS"
    one_line(capsys, main(args), f"{where}: ", problem)
    assert not database.exists()
