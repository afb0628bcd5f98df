"""The sd_notify protocol, checked against a socket the test binds, as systemd would:
the exact datagrams, both address forms, and the watchdog settings."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from volsched.daemon.runtime.sd_notify import Notifier, notify, notify_address


@dataclass
class Manager:
    """The service manager's end: a bound datagram socket and the NOTIFY_SOCKET value
    that names it."""

    sock: socket.socket
    notify_socket: str

    @property
    def environ(self) -> dict[str, str]:
        return {"NOTIFY_SOCKET": self.notify_socket}

    def receive(self) -> bytes:
        return self.sock.recv(4096)

    def nothing_queued(self) -> bool:
        self.sock.setblocking(False)
        try:
            self.sock.recv(4096)
        except BlockingIOError:
            return True
        finally:
            self.sock.setblocking(True)
        return False


def _bound(address: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


@pytest.fixture
def path_manager(tmp_path: Path) -> Iterator[Manager]:
    path = str(tmp_path / "notify")
    with _bound(path) as sock:
        yield Manager(sock, path)


@pytest.fixture
def abstract_manager() -> Iterator[Manager]:
    name = f"volsched-test-{uuid.uuid4().hex}"
    with _bound("\0" + name) as sock:
        yield Manager(sock, "@" + name)


@pytest.fixture(params=["path", "abstract"])
def manager(request: pytest.FixtureRequest) -> Manager:
    fixture = "path_manager" if request.param == "path" else "abstract_manager"
    found: Manager = request.getfixturevalue(fixture)
    return found


def test_notify_sends_the_message_as_one_datagram(manager: Manager) -> None:
    assert notify("READY=1\nSTATUS=warm", manager.environ) is True
    assert manager.receive() == b"READY=1\nSTATUS=warm"


@pytest.mark.parametrize(
    ("call", "datagram"),
    [
        (lambda n: n.ready(), b"READY=1"),
        (lambda n: n.ready("scheduling 3 pods"), b"READY=1\nSTATUS=scheduling 3 pods"),
        (lambda n: n.stopping(), b"STOPPING=1"),
        (lambda n: n.stopping("draining"), b"STOPPING=1\nSTATUS=draining"),
        (lambda n: n.watchdog(), b"WATCHDOG=1"),
        (lambda n: n.status("loading cache"), b"STATUS=loading cache"),
        # A newline would start a second assignment: status text is kept on one line.
        (lambda n: n.status("two\nlines"), b"STATUS=two lines"),
        (lambda n: n.status("caf\u00e9"), "STATUS=caf\u00e9".encode()),
    ],
    ids=[
        "ready",
        "ready-status",
        "stopping",
        "stopping-status",
        "watchdog",
        "status",
        "status-one-line",
        "status-utf8",
    ],
)
def test_notifier_messages(
    manager: Manager, call: Callable[[Notifier], bool], datagram: bytes
) -> None:
    notifier = Notifier(manager.environ)
    assert notifier.enabled
    assert call(notifier) is True
    assert manager.receive() == datagram
    assert manager.nothing_queued()


def test_each_call_is_its_own_datagram(path_manager: Manager) -> None:
    notifier = Notifier(path_manager.environ)
    notifier.status("warming")
    notifier.ready()
    notifier.watchdog()
    notifier.stopping()
    received = [path_manager.receive() for _ in range(4)]
    assert received == [b"STATUS=warming", b"READY=1", b"WATCHDOG=1", b"STOPPING=1"]


def test_abstract_address_replaces_the_at_sign_with_nul() -> None:
    assert notify_address({"NOTIFY_SOCKET": "@/org/freedesktop/systemd1/notify"}) == (
        "\0/org/freedesktop/systemd1/notify"
    )
    assert notify_address({"NOTIFY_SOCKET": "/run/systemd/notify"}) == "/run/systemd/notify"


@pytest.mark.parametrize(
    "environ",
    [{}, {"NOTIFY_SOCKET": ""}, {"NOTIFY_SOCKET": "relative/path"}, {"NOTIFY_SOCKET": "vsock:2:1"}],
    ids=["unset", "empty", "relative", "vsock"],
)
def test_without_a_usable_socket_nothing_is_sent(environ: dict[str, str]) -> None:
    notifier = Notifier(environ)
    assert not notifier.enabled
    assert notify("READY=1", environ) is False
    assert notifier.ready() is False
    assert notifier.watchdog() is False


def test_a_vanished_socket_is_reported_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {"NOTIFY_SOCKET": str(tmp_path / "gone")}
    assert Notifier(environ).ready() is False
    assert "cannot notify the service manager" in caplog.text


def test_environment_is_read_from_the_mapping_given() -> None:
    # Never from os.environ: a NOTIFY_SOCKET in the test runner's environment (pytest run
    # from a systemd unit) must not receive the test's messages.
    assert Notifier({}).enabled is False


@pytest.mark.parametrize(
    ("environ", "interval", "ping"),
    [
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"}, 30.0, 15.0),
        ({"WATCHDOG_USEC": "30000000"}, 30.0, 15.0),
        ({"WATCHDOG_USEC": "500000", "WATCHDOG_PID": "4242"}, 0.5, 0.25),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "x"}, None, None),
        ({"WATCHDOG_USEC": "0", "WATCHDOG_PID": "4242"}, None, None),
        ({"WATCHDOG_USEC": "-5"}, None, None),
        ({"WATCHDOG_USEC": "30s"}, None, None),
        ({"WATCHDOG_USEC": "3_000"}, None, None),
        ({"WATCHDOG_USEC": ""}, None, None),
        ({"WATCHDOG_PID": "4242"}, None, None),
        ({}, None, None),
    ],
    ids=[
        "ours",
        "no-pid",
        "sub-second",
        "other-pid",
        "bad-pid",
        "zero",
        "negative",
        "unit",
        "underscore",
        "empty",
        "pid-only",
        "off",
    ],
)
def test_watchdog_interval(
    environ: dict[str, str], interval: float | None, ping: float | None
) -> None:
    notifier = Notifier(environ, pid=4242)
    assert notifier.watchdog_interval_seconds() == interval
    assert notifier.watchdog_ping_seconds() == ping


def test_the_default_pid_is_this_process() -> None:
    environ = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert Notifier(environ).watchdog_interval_seconds() == 2.0
