"""What hostile inputs cost now that they are bounded: peak memory, time, and how the
daemon's ``/livez`` answers meanwhile. Each scenario runs in a fresh interpreter that
reports its own peak RSS; the hostile servers run in this process, so their memory is
not counted.

    python -m bench.bounded_inputs [SCENARIO...] [--pods 50]

Scenarios:

- ``extender``: the daemon (against the embedded cluster) with one ignorable filter
  extender answering every call with 200 MB of JSON; 50 pods. ``/livez`` is probed
  every 50 ms from this process throughout.
- ``extender-12mb``: the same with a 12 MB answer (1.2 million node names), under the
  16 MiB limit: read, decoded and checked for every pod.
- ``dev-zero``: ``volsched simulate /dev/zero``.
- ``yaml-70mb``: ``volsched simulate`` of a 70 MB YAML snapshot of nodes (refused);
  ``yaml-10mb``: of a 10 MB one (50,000 nodes, read: what a snapshot costs).
- ``endless-continue``: ``volsched simulate --kubeconfig`` against an API server that
  answers every list with a new ``continue`` token.
- ``huge-page``: the same against one that answers a list with one 200 MB page.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MB = 1000 * 1000
ANSWER_BYTES = 200 * MB
PODS = 50
CHUNK = b'"node-1", ' * 6_554


class Hostile(BaseHTTPRequestHandler):
    """POST: an extender's filter answer of ``ANSWER_BYTES``. GET: a list page with a
    new continue token each time, or (``huge``) one page of ``ANSWER_BYTES``."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes
    huge = False
    answer_bytes = ANSWER_BYTES
    requests = 0
    tokens = itertools.count()

    def _stream(self, prefix: bytes, total: int = ANSWER_BYTES) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        with suppress(OSError):
            chunks = itertools.repeat(CHUNK, total // len(CHUNK))
            for part in itertools.chain([prefix], chunks, [b'"node-1"]}']):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests += 1
        self._stream(b'{"NodeNames": [', self.answer_bytes)

    def do_GET(self) -> None:
        type(self).requests += 1
        if self.huge:
            self._stream(b'{"items": [')
            return
        page = {"kind": "List", "metadata": {"continue": f"t{next(self.tokens)}"}, "items": []}
        body = json.dumps(page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(
    huge: bool = False, answer_bytes: int = ANSWER_BYTES
) -> tuple[ThreadingHTTPServer, type[Hostile]]:
    handler = type(
        "Handler", (Hostile,), {"huge": huge, "requests": 0, "answer_bytes": answer_bytes}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


def child(argv: list[str], probe: bool = False) -> dict[str, Any]:
    """Run ``python -m bench.bounded_inputs --child ...``; with ``probe``, GET the
    ``/livez`` of the port it prints first, every 50 ms until it ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.bounded_inputs", "--child", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lags: list[float] = []
    if probe:
        port = int(process.stdout.readline())
        while process.poll() is None:
            started = time.monotonic()
            with suppress(OSError):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=60).read()
                lags.append(time.monotonic() - started)
            time.sleep(0.05)
    out, err = process.communicate(timeout=600)
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result["stderr"] = err.strip()[-300:]
    if lags:
        lags.sort()
        result["livez_probes"] = len(lags)
        result["livez_max_ms"] = round(lags[-1] * 1000, 1)
        result["livez_p99_ms"] = round(lags[int(len(lags) * 0.99)] * 1000, 1)
    return result


def measured_cli(argv: list[str]) -> None:
    """The command line, then its status, time and peak RSS as one JSON line."""
    from volsched.daemon.cli.main import main

    started = time.monotonic()
    status = main(argv)
    print(json.dumps({"status": status, "seconds": round(time.monotonic() - started, 2),
                      "peak_rss_mib": round(_peak_rss_mib(), 1)}))  # fmt: skip


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def daemon_with_extender(url: str, pods: int) -> None:
    """The daemon against the embedded cluster, one ignorable extender at ``url``;
    prints its HTTP port, then a JSON line once every pod is bound."""
    from volsched.daemon.config.settings import (
        AuthSettings,
        DatabaseSettings,
        HttpSettings,
        Settings,
    )
    from volsched.daemon.kube.client import KubeClient
    from volsched.daemon.runtime.app import DaemonOptions, open_daemon
    from volsched.emulator import ApiServer, write_kubeconfig
    from volsched.scheduling.extender_config import parse_extenders

    entry = {"urlPrefix": url, "filterVerb": "filter", "nodeCacheCapable": True,
             "ignorable": True, "httpTimeout": "30s"}  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="volsched-bench-"))
    api = ApiServer()
    await api.start()
    settings = Settings(
        database=DatabaseSettings(str(workdir / "volsched.db")),
        http=HttpSettings("127.0.0.1:0", AuthSettings(enabled=False)),
        extenders=parse_extenders([entry], "bench"),
    )
    client = await KubeClient.connect(str(write_kubeconfig(workdir / "kubeconfig", api.url)))
    daemon = await open_daemon(settings, client, DaemonOptions(seed=1))
    await daemon.start()
    await daemon.leading.wait()
    print(daemon.http_port, flush=True)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}  # fmt: skip
    started = time.monotonic()
    api.load([node])
    api.load(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
         "spec": {"schedulerName": "volsched", "containers": [{"name": "c", "image": "x"}]}}
        for i in range(pods)
    )  # fmt: skip
    while any(not (api.get("Pod", f"p{i}", "default") or {})["spec"].get("nodeName")
              for i in range(pods)):  # fmt: skip
        await asyncio.sleep(0.05)
    seconds = time.monotonic() - started
    await daemon.stop()
    await client.close()
    await api.stop()
    print(json.dumps({"pods_bound": pods, "seconds": round(seconds, 2),
                      "peak_rss_mib": round(_peak_rss_mib(), 1)}))  # fmt: skip


def yaml_snapshot(path: Path, size: int) -> None:
    node = (
        "---\nkind: Node\napiVersion: v1\nmetadata:\n  name: node-{i:07d}\n  labels:\n"
        "    kubernetes.io/hostname: node-{i:07d}\n    topology.kubernetes.io/zone: zone-a\n"
        "status:\n  allocatable: {{cpu: '4', memory: 16Gi, pods: '110'}}\n"
    )
    with path.open("w") as out:
        written = 0
        for i in itertools.count():
            written += out.write(node.format(i=i))
            if written >= size:
                return


def run(scenario: str, workdir: Path, pods: int = PODS) -> dict[str, Any]:
    if scenario.startswith("extender"):
        server, handler = serve(
            answer_bytes=12 * MB if scenario == "extender-12mb" else ANSWER_BYTES
        )
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = child(["extender", url, str(pods)], probe=True)
        result["extender_calls"] = handler.requests
    elif scenario == "dev-zero":
        result = child(["cli", "simulate", "/dev/zero"])
    elif scenario.startswith("yaml-"):
        path = workdir / "cluster.yaml"
        yaml_snapshot(path, (70 if scenario == "yaml-70mb" else 10) * MB)
        result = child(["cli", "simulate", str(path), "-o", "json"])
    else:
        server, handler = serve(huge=scenario == "huge-page")
        kubeconfig = workdir / "kubeconfig"
        from volsched.emulator import write_kubeconfig

        write_kubeconfig(kubeconfig, f"http://127.0.0.1:{server.server_address[1]}")
        result = child(["cli", "simulate", "--kubeconfig", str(kubeconfig)])
        result["requests"] = handler.requests
    return {"scenario": scenario, **result}


SCENARIOS = (
    "extender",
    "extender-12mb",
    "dev-zero",
    "yaml-70mb",
    "yaml-10mb",
    "endless-continue",
    "huge-page",
)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        kind, *rest = sys.argv[2:]
        if kind == "extender":
            asyncio.run(daemon_with_extender(rest[0], int(rest[1])))
        else:
            measured_cli(rest)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=", ".join(SCENARIOS))
    parser.add_argument("--pods", type=int, default=PODS, help="pods of the extender scenarios")
    args = parser.parse_args()
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario {sorted(unknown)[0]}; choose from {', '.join(SCENARIOS)}")
    with tempfile.TemporaryDirectory() as directory:
        for scenario in args.scenarios or SCENARIOS:
            print(json.dumps(run(scenario, Path(directory), args.pods)), flush=True)


if __name__ == "__main__":
    main()
