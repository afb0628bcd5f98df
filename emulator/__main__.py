"""``python -m volsched.emulator --port 8001 [--load FILE.yaml] [--kubeconfig PATH]
[--realistic]``: run standalone."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import yaml

from volsched.emulator.bookmark_timing import CADENCES
from volsched.emulator.controllers import ControllerSettings
from volsched.emulator.kubeconfig import write_kubeconfig
from volsched.emulator.server import ApiServer


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m volsched.emulator", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="FILE.yaml",
        help="objects to load (repeatable)",
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="write a kubeconfig for the server here"
    )
    parser.add_argument(
        "--kubelet", action="store_true", help="run the kubelet controller (nodes become Ready)"
    )
    parser.add_argument(
        "--bookmark-cadence",
        choices=CADENCES,
        default=None,
        help="watch bookmarks every second (interval) or when kube-apiserver sends them "
        "(apiserver; the default with --realistic)",
    )
    parser.add_argument(
        "--realistic",
        action="store_true",
        help="serve HTTPS with a CA of its own (carried by --kubeconfig) and objects as "
        "kube-apiserver returns them: every default, managedFields",
    )
    return parser.parse_args(argv)


async def _serve(args: argparse.Namespace) -> None:
    server = ApiServer(
        controllers=ControllerSettings(kubelet=args.kubelet),
        bookmark_cadence=args.bookmark_cadence,
        realistic=args.realistic,
    )
    for path in args.load:
        with Path(path).open() as handle:
            server.load([d for d in yaml.safe_load_all(handle) if d])
    url = await server.start(args.host, args.port)
    if args.kubeconfig:
        write_kubeconfig(args.kubeconfig, url, certificate_authority=server.certificate_authority)
    # Stop on Ctrl-C or SIGTERM, even when started as a background job of a script
    # (which starts with SIGINT ignored).
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    print(f"emulator serving on {url} (Ctrl-C to stop)", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(_parse(argv)))


if __name__ == "__main__":
    main()
