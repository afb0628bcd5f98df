"""Reading a file named on the command line or in a config: bounded before a byte is read.

``Path.read_bytes`` trusts the file: ``/dev/zero`` or a FIFO is read until memory runs
out, and a huge snapshot is parsed for minutes before anything says no. So the file is
opened without blocking (a FIFO with no writer would wait forever in ``open``), checked
with ``fstat`` on that same descriptor (no window between the check and the read), and
refused unless it is a regular file no larger than the limit. At most ``limit + 1``
bytes are read, so a file that grows while it is read is refused too.
"""

from __future__ import annotations

import os
import stat

MIB = 1024 * 1024
# Snapshots, configs, policies, kubeconfigs, saved shadow reports: a 10,000-node
# snapshot cut to the fields scheduling reads is about 40 MiB of YAML.
MAX_FILE_BYTES = 64 * MIB


class FileLimitError(ValueError):
    """The file cannot be read within the bounds; the message is one line without the
    file's name (the caller names it as it was given)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def shown_size(size: int) -> str:
    return f"{size / MIB:,.1f} MiB" if size >= MIB else f"{size:,} bytes"


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Raises ``FileLimitError`` for anything else, and ``OSError`` when it cannot be
    opened or read.
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise FileLimitError(
                f"{_kind(status.st_mode)}, not a regular file of at most {shown_size(limit)}"
            )
        if status.st_size > limit:
            raise FileLimitError(
                f"{shown_size(status.st_size)}, more than the {shown_size(limit)} allowed"
            )
        chunks: list[bytes] = []
        read = 0
        while read <= limit:
            chunk = os.read(descriptor, min(limit + 1 - read, 4 * MIB))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        if read > limit:
            raise FileLimitError(f"grew past the {shown_size(limit)} allowed while being read")
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def read_text_bounded(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> str:
    """``read_bounded`` as UTF-8 text; ``UnicodeDecodeError`` as ``str.decode`` raises."""
    return read_bounded(path, limit).decode("utf-8")
