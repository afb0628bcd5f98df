"""The ``volsched`` command's first lines: a stop asked for while it starts is honoured.

Importing the daemon takes a second or more (several on a busy node), and a SIGTERM in
that time would kill the process by the default action — exit status -15, a failed stop
for systemd and for a Pod's termination. Until the command decides what to do with the
signal, SIGTERM ends the process with status 0: nothing is open yet that needs closing.
"""

from __future__ import annotations

import gc
import signal
import sys
from types import FrameType


def _stop_before_start(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> int:
    signal.signal(signal.SIGTERM, _stop_before_start)
    if sys.argv[1:2] == ["run"]:
        # The daemon's collector thresholds from the first import on, not from the end
        # of its first sync: importing it and decoding the first lists allocate many
        # objects and few cycles, and CPython's default (a collection every 700
        # allocations) spent a few per cent of the imports on collections that freed
        # next to nothing.
        from volsched.daemon.runtime.interpreter import GC_THRESHOLDS

        gc.set_threshold(*GC_THRESHOLDS)
    from volsched.daemon.cli.main import main as run_command

    if sys.argv[1:2] != ["run"]:
        # Only the daemon stops on SIGTERM with status 0; a one-shot command is ended by
        # it as any program is.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return run_command()


if __name__ == "__main__":
    sys.exit(main())
