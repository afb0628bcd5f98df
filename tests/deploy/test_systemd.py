"""systemd/volsched.service: systemd's own checks (``systemd-analyze verify`` and
``security``), and the settings the daemon and the docs rely on."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from volsched.daemon.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "volsched.service"
ENV_EXAMPLE = ROOT / "systemd" / "volsched.env.example"
INSTALLED_EXEC = "/opt/volsched/bin/volsched"
INSTALL_HINT = "systemd-analyze is missing: apt-get install systemd"


def unit_settings(text: str) -> dict[str, list[str]]:
    """``Key=value`` assignments of the [Service] section, in order, per key."""
    settings: dict[str, list[str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]":
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


SERVICE = unit_settings(UNIT.read_text(encoding="utf-8"))


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip(INSTALL_HINT)
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
    match = re.match(r"systemd (\d+)", version.stdout)
    if match is None or int(match.group(1)) < 250:
        # --offline= (security of a unit file that is not loaded) arrived in systemd 250.
        pytest.skip(f"systemd-analyze >= 250 needed, found {version.stdout.split(chr(10))[0]!r}")
    return found


def volsched_script() -> str:
    found = shutil.which("volsched", path=str(Path(sys.executable).parent)) or shutil.which(
        "volsched"
    )
    if found is None:
        pytest.fail("the volsched console script is not installed: pip install -e '.[test]'")
    return found


@pytest.fixture
def testable_unit(tmp_path: Path) -> Iterator[Path]:
    """A copy of the unit whose ExecStart names the ``volsched`` script installed in this
    environment: ``verify`` insists that the binary exists and is executable, and the
    real unit names the production path /opt/volsched/bin/volsched, absent here. The
    copy keeps the unit's file name, which ``verify`` checks against the unit type."""
    text = UNIT.read_text(encoding="utf-8")
    assert INSTALLED_EXEC in text
    copy = tmp_path / UNIT.name
    copy.write_text(text.replace(INSTALLED_EXEC, volsched_script()), encoding="utf-8")
    yield copy


def test_systemd_analyze_verify(testable_unit: Path) -> None:
    result = subprocess.run(
        [systemd_analyze(), "verify", str(testable_unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # verify reports unknown keys and bad values as warnings with exit status 0. Lines
    # about other units (the host's own, pulled in as dependencies) are not ours to fix.
    ours = [line for line in result.stderr.splitlines() if UNIT.name in line]
    assert ours == [], result.stderr


SECURITY_RATINGS_OK_OR_BETTER = {"PERFECT", "SAFE", "OK"}


def test_systemd_analyze_security_rates_ok_or_better(testable_unit: Path) -> None:
    result = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(testable_unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", result.stdout)
    assert match is not None, result.stdout
    exposure, rating = float(match.group(1)), match.group(2)
    assert rating in SECURITY_RATINGS_OK_OR_BETTER, result.stdout
    # At the time of writing: 1.2 OK. A drop means a hardening setting went missing.
    assert exposure <= 1.5, result.stdout


HARDENING = {
    "DynamicUser": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    "SystemCallArchitectures": "native",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictNamespaces": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "UMask": "0077",
}


@pytest.mark.parametrize(("key", "value"), sorted(HARDENING.items()))
def test_hardening_setting(key: str, value: str) -> None:
    assert SERVICE.get(key) == [value]


def test_system_call_filter_starts_from_the_service_set() -> None:
    assert SERVICE["SystemCallFilter"][0] == "@system-service"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("Type", "notify"),
        ("Restart", "on-failure"),
        ("WatchdogSec", "30s"),
        ("StateDirectory", "volsched"),
        ("LoadCredential", "kubeconfig:/etc/volsched/kubeconfig"),
        ("EnvironmentFile", "-/etc/volsched/volsched.env"),
    ],
)
def test_service_setting(key: str, value: str) -> None:
    assert SERVICE.get(key) == [value]


def test_exec_start_is_a_command_line_volsched_accepts() -> None:
    (exec_start,) = SERVICE["ExecStart"]
    words = shlex.split(exec_start)
    assert words[0] == INSTALLED_EXEC
    assert words[1:4] == ["run", "--kubeconfig", "${CREDENTIALS_DIRECTORY}/kubeconfig"]
    assert words[4:] == ["$VOLSCHED_OPTIONS"]
    build_parser().parse_args(words[1:4])


def test_env_example_options_are_accepted_by_volsched_run() -> None:
    """Every VOLSCHED_OPTIONS line of the example, uncommented, is a valid command line."""
    examples = re.findall(r"^#?VOLSCHED_OPTIONS=(.*)$", ENV_EXAMPLE.read_text(), re.MULTILINE)
    assert examples
    for options in examples:
        args = build_parser().parse_args(
            [
                "run",
                "--kubeconfig",
                "/run/credentials/volsched.service/kubeconfig",
                *options.split(),
            ]
        )
        assert args.config == "/etc/volsched/config.yaml"
