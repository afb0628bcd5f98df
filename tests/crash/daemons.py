"""Daemons as the crash suite runs them: real ``volsched run`` processes, each a replica
with its own SQLite database and a leader-election identity, killed with SIGKILL.

A replica is a database file; a process is one life of a replica. Restarting the same
replica reuses its database (warm start, its own journal), and sometimes its identity
(a systemd unit with a configured identity takes its own lease back at once); another
replica has its own, possibly stale, database; a new replica starts from an empty one.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# Short, so that a new identity waits about a second for a dead leader's lease; the
# renew deadline still leaves a stalled leader time to step down before it expires.
LEASE_DURATION_SECONDS = 1.0
RENEW_DEADLINE_SECONDS = 0.7
RETRY_PERIOD_SECONDS = 0.15


@dataclass(slots=True)
class Replica:
    name: str
    database: Path


class DaemonProcess:
    """One ``volsched run`` process; its log (stderr) goes to a file beside its config."""

    def __init__(
        self, replica: Replica, identity: str, process: asyncio.subprocess.Process, log: Path
    ) -> None:
        self.replica = replica
        self.identity = identity
        self.process = process
        self.log = log
        self.killed = False
        self.exited = asyncio.ensure_future(process.wait())

    @property
    def alive(self) -> bool:
        return not self.exited.done()

    def kill(self) -> None:
        """SIGKILL, now: no handler, no flush, no goodbye."""
        self.killed = True
        if self.process.returncode is None:
            self.process.kill()

    async def wait(self) -> int:
        return await asyncio.shield(self.exited)


async def launch(workdir: Path, kubeconfig: Path, replica: Replica, identity: str) -> DaemonProcess:
    config = workdir / f"{identity}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "database": {"path": str(replica.database)},
                "http": {"address": "127.0.0.1:0", "authentication": {"enabled": False}},
                "bindTimeoutSeconds": 30,
                "backoff": {"initialSeconds": 0.2, "maxSeconds": 2},
                "leaderElection": {
                    "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                    "renewDeadlineSeconds": RENEW_DEADLINE_SECONDS,
                    "retryPeriodSeconds": RETRY_PERIOD_SECONDS,
                    "identity": identity,
                },
            }
        )
    )
    log = workdir / f"{identity}.log"
    with log.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "volsched.daemon.cli.main",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(config),
            cwd=str(ROOT),
            env=_environment(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )
    return DaemonProcess(replica, identity, process, log)


def _environment() -> dict[str, str]:
    """The test's environment without the variables that would override the config."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("VOLSCHED_") and key != "OTEL_EXPORTER_OTLP_ENDPOINT"
    }
