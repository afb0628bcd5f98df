"""The systemd notification protocol (``sd_notify(3)``), without libsystemd.

A service started with ``Type=notify`` tells the service manager how it is doing by
sending newline-separated ``KEY=VALUE`` assignments, one datagram per message, to the
``AF_UNIX`` datagram socket named in ``$NOTIFY_SOCKET``:

- ``READY=1`` — start-up is complete (for volsched: the cache is warm and the scheduling
  loop runs); until then ``systemctl start`` waits, bounded by ``TimeoutStartSec=``;
- ``WATCHDOG=1`` — still healthy; with ``WatchdogSec=`` set, a service that stays silent
  for the whole interval is killed (SIGABRT) and restarted. Send it only when the
  scheduling loop makes progress: a ping from a timer that runs while the loop is stuck
  would defeat the watchdog;
- ``STOPPING=1`` — shutdown has begun;
- ``STATUS=…`` — one line shown by ``systemctl status``;
- ``EXTEND_TIMEOUT_USEC=…`` — the current start (or stop) needs this much longer.

``$NOTIFY_SOCKET`` is an absolute path, or starts with ``@`` for a socket in the Linux
abstract namespace (the ``@`` stands for the leading NUL byte of its address). Without it
the process is not supervised by a notify-aware manager and every call is a no-op that
returns False: volsched runs the same under systemd, in a container and in a terminal.

The environment is passed in (the caller passes ``os.environ``); this module reads no
process state of its own except, by default, its pid for ``$WATCHDOG_PID``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("volsched.sd_notify")


def notify_address(environ: Mapping[str, str]) -> str | None:
    """The socket address from ``$NOTIFY_SOCKET``, in the form ``socket.sendto`` takes;
    None when unset or in a form this module does not speak (``vsock:``, relative)."""
    value = environ.get("NOTIFY_SOCKET", "")
    if value.startswith("@"):
        # Abstract namespace: the address is a NUL byte then the name, unterminated.
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    if value:
        log.debug("NOTIFY_SOCKET=%r is neither a path nor abstract: not notifying", value)
    return None


def notify(message: str, environ: Mapping[str, str]) -> bool:
    """Send one notification datagram. True when it was sent; False when there is no
    manager to tell or the send failed (logged: a lost notification must never stop the
    daemon, and the watchdog will notice a daemon that can no longer report)."""
    address = notify_address(environ)
    if address is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message.encode("utf-8"), address)
    except OSError as exc:
        log.warning("cannot notify the service manager at %r: %s", environ["NOTIFY_SOCKET"], exc)
        return False
    return True


class Notifier:
    """The few notifications volsched sends, bound to one environment.

    ``pid`` is this process's id, compared with ``$WATCHDOG_PID`` (the manager sets it
    to the main pid; a child that inherited the environment must not ping for it).
    """

    def __init__(self, environ: Mapping[str, str], pid: int | None = None) -> None:
        self.environ = environ
        self.pid = os.getpid() if pid is None else pid

    @property
    def enabled(self) -> bool:
        return notify_address(self.environ) is not None

    def send(self, message: str) -> bool:
        return notify(message, self.environ)

    def ready(self, status: str | None = None) -> bool:
        return self.send("READY=1" + (f"\nSTATUS={_one_line(status)}" if status else ""))

    def stopping(self, status: str | None = None) -> bool:
        return self.send("STOPPING=1" + (f"\nSTATUS={_one_line(status)}" if status else ""))

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")

    def status(self, text: str) -> bool:
        return self.send(f"STATUS={_one_line(text)}")

    def watchdog_interval_seconds(self) -> float | None:
        """``WatchdogSec=`` as the manager passed it (``$WATCHDOG_USEC``), or None when the
        watchdog is off, malformed, or meant for another process (``$WATCHDOG_PID``)."""
        usec = _unsigned(self.environ.get("WATCHDOG_USEC"))
        if not usec:
            return None
        pid_text = self.environ.get("WATCHDOG_PID")
        if pid_text is not None and _unsigned(pid_text) != self.pid:
            return None
        return usec / 1_000_000

    def watchdog_ping_seconds(self) -> float | None:
        """How often to ping: half the interval, as ``sd_watchdog_enabled(3)`` advises,
        so one late ping is not a missed one."""
        interval = self.watchdog_interval_seconds()
        return None if interval is None else interval / 2


def _unsigned(text: str | None) -> int | None:
    # Plain ASCII digits only, as systemd writes them: int() would also take "+5",
    # " 5" or "5_000".
    if text is None or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def _one_line(text: str) -> str:
    # A newline would start a new assignment in the datagram.
    return " ".join(text.splitlines())
