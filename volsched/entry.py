"""The ``volsched`` command's first lines: a stop asked for while it starts is honoured.

Importing the daemon takes a second or more (several on a busy node), and a SIGTERM in
that time would kill the process by the default action — exit status -15, a failed stop
for systemd and for a Pod's termination. Until the command decides what to do with the
signal, SIGTERM ends the process with status 0: nothing is open yet that needs closing.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _stop_before_start(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> int:
    signal.signal(signal.SIGTERM, _stop_before_start)
    from volsched.daemon.cli.main import main as run_command

    if sys.argv[1:2] != ["run"]:
        # Only the daemon stops on SIGTERM with status 0; a one-shot command is ended by
        # it as any program is.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return run_command()


if __name__ == "__main__":
    sys.exit(main())
