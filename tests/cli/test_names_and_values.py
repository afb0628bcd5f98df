"""Values refused as kube-scheduler refuses them, each reproduction of the hostile
re-test kept as a row: exit status 2, one line on stderr naming the flag, file or field
— no traceback, nothing created, nothing accepted that upstream would not take."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from volsched.daemon.cli.main import build_parser, main
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.overrides import apply_overrides
from volsched.emulator import write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
NODE = (
    "kind: Node\nmetadata: {name: n, labels: {kubernetes.io/hostname: n}}\n"
    "status: {allocatable: {cpu: '4', memory: 4Gi, pods: '110'}}\n"
)
KSC = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
JUST_PAST_GO = "2562047h47m16.854775808s"  # one nanosecond past time.Duration's range
TWO_TO_THE_63 = str(2**63)


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``volsched ARGV`` in-process: its status (argparse's exit included) and stderr."""
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 1
    return status, capsys.readouterr().err


def one_line(status: int, err: str, *expected: str) -> None:
    assert status == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err


def kubeconfig(tmp_path: Path, **cluster: str) -> str:
    path = write_kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1")
    data = yaml.safe_load(path.read_text())
    data["clusters"][0]["cluster"].update(cluster)
    path.write_text(yaml.safe_dump(data))
    return str(path)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- the kubeconfig ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "problem"),
    [
        (
            {"server": "https://x:" + "1" * 4301},
            "cluster.server: 'https://x:1111",
        ),
        ({"server": "https://x:0"}, "the port must be a number between 1 and 65535"),
        (
            {"server": "https://x", "proxy-url": "gopher://x"},
            "cluster.proxy-url: 'gopher://x' is not an http, https or socks5 URL",
        ),
        (
            {"server": "https://x", "proxy-url": "socks5://127.0.0.1:1080"},
            "cluster.proxy-url: 'socks5://127.0.0.1:1080': volsched's HTTP client (aiohttp) "
            "has no socks5 support",
        ),
        (
            {"server": "https://x", "proxy-url": "http://proxy:" + "9" * 4301},
            "the port must be a number between 1 and 65535",
        ),
        (
            {"server": "https://x", "proxy-url": "http://"},
            "cluster.proxy-url: 'http://' names no host",
        ),
    ],
    ids=[
        "4301-digit port",
        "port 0",
        "gopher proxy",
        "socks5 proxy",
        "proxy port",
        "no proxy host",
    ],
)
def test_a_kubeconfig_server_or_proxy_volsched_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: dict[str, str], problem: str
) -> None:
    path = kubeconfig(tmp_path, **cluster)
    status, err = cli(["run", "--kubeconfig", path, "--database", str(tmp_path / "v.db")], capsys)
    one_line(status, err, path, problem)
    assert not (tmp_path / "v.db").exists()


# -- the database path ------------------------------------------------------------------


def nul_in_config(tmp_path: Path) -> tuple[list[str], list[str]]:
    config = write(tmp_path, "c.yaml", 'database: {path: "v\\0.db"}\n')
    return ["--config", config], [config, "database.path: must not contain a NUL byte"]


def nul_flag(tmp_path: Path) -> tuple[list[str], list[str]]:
    return ["--database", f"{tmp_path}/v\0.db"], ["--database: must not contain a NUL byte"]


@pytest.mark.parametrize("command", ["run", "migrate"])
@pytest.mark.parametrize("given", [nul_in_config, nul_flag], ids=["config", "flag"])
def test_a_nul_byte_in_the_database_path(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    given: Callable[[Path], tuple[list[str], list[str]]],
) -> None:
    args, expected = given(tmp_path)
    status, err = cli([command, *args], capsys)
    one_line(status, err, *expected)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["c.yaml"])


@pytest.mark.parametrize("source", ["flag", "environment", "config"])
def test_run_creates_no_directory_for_its_database(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    database = tmp_path / "nonexistent" / "dir" / "db"
    args = ["run", "--kubeconfig", kubeconfig(tmp_path)]
    if source == "flag":
        args += ["--database", str(database)]
        where = "--database: "
    elif source == "environment":
        monkeypatch.setenv("VOLSCHED_DATABASE", str(database))
        where = "VOLSCHED_DATABASE: "
    else:
        config = write(tmp_path, "c.yaml", f"database: {{path: '{database}'}}\n")
        args += ["--config", config]
        where = f"{config}: database.path: "
    status, err = cli(args, capsys)
    one_line(status, err, where, f"the directory {database.parent} does not exist")
    assert not (tmp_path / "nonexistent").exists()


# -- durations, weights, integers, booleans -----------------------------------------------


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        (
            KSC + f"leaderElection: {{leaseDuration: {JUST_PAST_GO}}}\n",
            f"leaderElection.leaseDuration: must be at most 2562047h47m16.854775807s "
            f"(Go's time.Duration), not '{JUST_PAST_GO}'",
        ),
        (
            KSC + "leaderElection: {renewDeadline: 300000000h}\n",
            "leaderElection.renewDeadline: must be at most 2562047h47m16.854775807s",
        ),
        (
            KSC + f"leaderElection: {{retryPeriod: {TWO_TO_THE_63}}}\n",
            "leaderElection.retryPeriod: must be at most 9223372036854775807 nanoseconds",
        ),
        (
            KSC + "extenders:\n- {urlPrefix: 'http://127.0.0.1:1', filterVerb: f, "
            f"httpTimeout: {JUST_PAST_GO}}}\n",
            "extenders[0].httpTimeout: must be at most 2562047h47m16.854775807s",
        ),
        (
            KSC + "profiles:\n- pluginConfig:\n  - name: DynamicResources\n"
            "    args: {filterTimeout: 9999999999999999999999h}\n",
            "args.filterTimeout: must be at most 2562047h47m16.854775807s",
        ),
        (
            KSC + "extenders:\n- {urlPrefix: 'http://127.0.0.1:1', prioritizeVerb: p, "
            f"weight: {TWO_TO_THE_63}}}\n",
            "extenders[0].weight: must be between -9223372036854775808 and "
            "9223372036854775807 (an int64)",
        ),
        (
            KSC + "profiles:\n- plugins:\n    score:\n      enabled:\n"
            f"      - {{name: NodeAffinity, weight: {TWO_TO_THE_63}}}\n",
            "profiles[0].plugins.score.enabled[0].weight: must be between -2147483648 "
            "and 2147483647",
        ),
        (
            KSC + "leaderElection: {leaderElect: true, resourceName: 'x?watch=true'}\n",
            "leaderElection: the lease name (leaseName / resourceName) 'x?watch=true' must "
            "be a lowercase RFC 1123 subdomain",
        ),
        (
            "leaderElection: {leaseNamespace: 'kube-system/../default'}\n",
            "leaderElection: the lease namespace (leaseNamespace / resourceNamespace) "
            "'kube-system/../default' must be a lowercase RFC 1123 label",
        ),
    ],
    ids=[
        "lease duration past Go",
        "300000000h",
        "nanoseconds past int64",
        "extender timeout",
        "plugin arg timeout",
        "extender weight 2^63",
        "plugin weight 2^63",
        "lease name",
        "lease namespace",
    ],
)
def test_config_values_kube_scheduler_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, problem: str
) -> None:
    path = write(tmp_path, "c.yaml", config)
    snapshot = write(tmp_path, "s.yaml", NODE)
    status, err = cli(["simulate", snapshot, "--config", path, "-o", "json"], capsys)
    one_line(status, err, path, problem)


def test_the_longest_go_duration_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = KSC + (
        "leaderElection: {leaseDuration: 2562047h47m16.854775807s, renewDeadline: 2562047h}\n"
    )
    path = write(tmp_path, "c.yaml", config)
    status, err = cli(["simulate", write(tmp_path, "s.yaml", NODE), "--config", path], capsys)
    assert status == 0, err


@pytest.mark.parametrize(
    ("argv", "environment", "problem"),
    [
        (
            ["simulate", "S", "--seed", "٣"],
            {},
            "--seed: must be an integer in ASCII digits, not '٣'",
        ),
        (["simulate", "S", "--seed", "３"], {}, "--seed: must be an integer in ASCII digits"),
        (["simulate", "S", "--seed", "1" * 4301], {}, "--seed: must be an int64"),
        (["run", "--leader-elect=yes"], {}, "--leader-elect: must be true or false, not 'yes'"),
        (["run", "--leader-elect=1"], {}, "--leader-elect: must be true or false, not '1'"),
        (["run", "--leader-elect=TRUE"], {}, "--leader-elect: must be true or false"),
        (
            ["run"],
            {"VOLSCHED_LEADER_ELECT": "yes"},
            "VOLSCHED_LEADER_ELECT: must be true or false, not 'yes'",
        ),
        (["run", "--shadow=yes"], {}, "--shadow: ignored explicit argument 'yes'"),
    ],
    ids=["arabic-indic", "fullwidth", "4301 digits", "yes", "1", "TRUE", "env yes", "shadow"],
)
def test_flags_are_read_as_kube_scheduler_reads_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    environment: dict[str, str],
    problem: str,
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    snapshot = write(tmp_path, "s.yaml", NODE)
    database = tmp_path / "v.db"
    args = [snapshot if arg == "S" else arg for arg in argv]
    if args[0] == "run":
        args += ["--kubeconfig", kubeconfig(tmp_path), "--database", str(database)]
    status, err = cli(args, capsys)
    one_line(status, err, problem)
    assert not database.exists()


@pytest.mark.parametrize(
    ("flag", "enabled"),
    [("--leader-elect", True), ("--leader-elect=true", True), ("--leader-elect=false", False)],
)
def test_a_boolean_flag_alone_or_with_true_or_false_is_taken(
    tmp_path: Path, flag: str, enabled: bool
) -> None:
    """What ``volsched run`` does with the flag: leader election on or off."""
    args = build_parser().parse_args(["run", flag])
    settings = apply_overrides(
        load_settings(None, environ={}),
        {"leader_elect": args.leader_elect, "database": str(tmp_path / "v.db")},
        {},
    )
    assert settings.leader_election.enabled is enabled


def test_a_quantity_in_other_digits_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write(tmp_path, "s.yaml", NODE.replace("cpu: '4'", "cpu: '٤'"))
    status, err = cli(["simulate", snapshot, "-o", "json"], capsys)
    one_line(status, err, snapshot, "status.allocatable.cpu")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["simulate", "S", "--seed", "٣"], "volsched: argument --seed: must be an integer"),
        (["run", "--leader-elect=yes"], "volsched: --leader-elect: must be true or false"),
        (["run", "--database", "/nonexistent/dir/db"], "--database: the directory"),
    ],
)
def test_the_installed_command_says_it_in_one_line(
    tmp_path: Path, argv: list[str], problem: str
) -> None:
    args = [write(tmp_path, "s.yaml", NODE) if arg == "S" else arg for arg in argv]
    done = subprocess.run(
        [sys.executable, "-m", "volsched", *args],
        cwd=ROOT,
        env={**os.environ, "KUBECONFIG": kubeconfig(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and problem in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not Path("/nonexistent").exists()
