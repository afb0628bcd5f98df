"""Files named on the command line are checked before they are read: ``/dev/zero``, a
FIFO, a directory or a snapshot past 64 MiB is one line naming the file and the limit,
at once and in little memory (measured in a process of its own), where they used to
grow to 20 GB or parse for minutes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from volsched.cache.file_limits import MAX_FILE_BYTES, FileLimitError, read_bounded
from volsched.daemon.cli import shadow_report
from volsched.daemon.cli.main import main

MIB = 1024 * 1024
# A process that imports volsched and refuses a file stays well below this.
PEAK_RSS_MIB = 200

# The peak is VmHWM, the high-water mark of this program's own memory: getrusage's
# ru_maxrss also counts the parent's pages from before the exec (a vfork'ed child
# shares them), so under a large pytest worker it would measure the worker.
MEASURED = """
import json, re, sys, time
from pathlib import Path
from volsched.daemon.cli.main import main
started = time.monotonic()
status = main(sys.argv[1:])
peak = re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text())
print(json.dumps({"status": status, "seconds": time.monotonic() - started,
                  "peak_rss_mib": int(peak.group(1)) / 1024}))
"""


def measured(*argv: str) -> tuple[dict[str, float], str]:
    """The command line in a process of its own: its exit status, time, peak RSS, stderr."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURED, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def sparse(tmp_path: Path, name: str, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk space."""
    path = tmp_path / name
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_simulate_dev_zero_is_refused_at_once_in_little_memory() -> None:
    result, err = measured("simulate", "/dev/zero")
    assert result["status"] == 2
    assert err.strip() == (
        "volsched: /dev/zero: a character device, not a regular file of at most 64.0 MiB"
    )
    assert result["seconds"] < 2 and result["peak_rss_mib"] < PEAK_RSS_MIB


def test_shadow_report_of_dev_zero_is_refused_at_once_in_little_memory() -> None:
    result, err = measured("shadow-report", "--file", "/dev/zero")
    assert result["status"] == 2 and "Traceback" not in err
    assert err.strip().startswith("volsched: /dev/zero: a character device, not a regular file")
    assert result["seconds"] < 2 and result["peak_rss_mib"] < PEAK_RSS_MIB


def test_a_70_mb_snapshot_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = sparse(tmp_path, "cluster.yaml", 70 * 1000 * 1000)
    result, err = measured("simulate", str(path))
    assert result["status"] == 2
    assert err.strip() == f"volsched: {path}: 66.8 MiB, more than the 64.0 MiB allowed"
    assert result["seconds"] < 2 and result["peak_rss_mib"] < PEAK_RSS_MIB


def one_line(capsys: pytest.CaptureFixture[str], status: int) -> str:
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "{path}"],
        ["explain", "default/p", "{path}"],
        ["shadow-report", "--file", "{path}"],
        ["simulate", "--config", "{path}", "{snapshot}"],
        ["simulate", "--policy", "{path}", "{snapshot}"],
        ["simulate", "--kubeconfig", "{path}"],
    ],
)
@pytest.mark.parametrize("kind", ["fifo", "directory", "too large"])
def test_every_file_argument_is_checked_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], kind: str
) -> None:
    if kind == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)  # no writer: opening it the ordinary way blocks forever
        expected = "a FIFO, not a regular file of at most 64.0 MiB"
    elif kind == "directory":
        path = tmp_path / "dir"
        path.mkdir()
        expected = "a directory, not a regular file of at most 64.0 MiB"
    else:
        path = sparse(tmp_path, "big", MAX_FILE_BYTES + 1)
        expected = "64.0 MiB, more than the 64.0 MiB allowed"
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text("kind: Node\nmetadata: {name: n}\n")
    started = time.monotonic()
    status = main([arg.format(path=path, snapshot=snapshot) for arg in argv])
    line = one_line(capsys, status)
    assert str(path) in line and expected in line, line
    assert time.monotonic() - started < 2


def test_a_file_longer_than_its_size_says_is_refused_at_the_limit(tmp_path: Path) -> None:
    """Files of /proc say they are empty and are not: what is read is counted too."""
    assert os.stat("/proc/self/maps").st_size == 0
    with pytest.raises(FileLimitError, match="grew past the 100 bytes allowed while being read"):
        read_bounded("/proc/self/maps", 100)
    path = tmp_path / "exact"
    path.write_bytes(b"x" * 10)
    assert read_bounded(path, 10) == b"x" * 10
    with pytest.raises(FileLimitError, match="10 bytes, more than the 9 bytes allowed"):
        read_bounded(path, 9)


class Trickle(BaseHTTPRequestHandler):
    """A shadow report that says it is 1 MB and sends a byte every 0.2 s."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        try:
            for _ in range(100):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def trickle() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/shadow/report"
    server.shutdown()
    server.server_close()


def test_a_report_sent_a_byte_at_a_time_ends_within_the_timeout(
    trickle: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shadow_report, "TIMEOUT_SECONDS", 1.0)
    started = time.monotonic()
    status = main(["shadow-report", "--url", trickle])
    line = one_line(capsys, status)
    assert line == f"volsched: {trickle}: the report took more than 1s to read"
    assert time.monotonic() - started < 2
