"""``volsched``: the command line.

    volsched run [--kubeconfig FILE] [--config FILE] [--shadow]
    volsched shadow-report (--url URL | --file FILE) [-o table|json]
    volsched webhook [--kubeconfig FILE] [--config FILE] [--address A] [--cert-file F --key-file F]
    volsched demo
    volsched migrate [--config FILE | --database PATH] [--check]
    volsched simulate FILE... [--policy P] [--config C] [--seed N] [--now T] [-o json|table]
    volsched explain NAMESPACE/POD FILE... [same options]
    volsched snapshot [--kubeconfig FILE] [--context C] [-o FILE]
    volsched simulate | explain … without FILEs: the live cluster, read-only (see ``live``)

Exit status 0 when the snapshot was read (pods may still be pending), 2 with one line on
stderr for anything the user can fix (unreadable file, malformed object, bad policy or
config). ``migrate --check`` exits 1 when it found something wrong in the database.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from volsched.cache.errors import ConfigError, VolschedError
from volsched.daemon.cli import live
from volsched.daemon.cli.deciding import add_snapshot_options, decide_snapshot, output_format
from volsched.daemon.cli.flag_values import OneLineParser, add_boolean_flag
from volsched.daemon.cli.report import (
    explain_json,
    explain_table,
    simulation_json,
    simulation_table,
)
from volsched.daemon.cli.shadow_report import add_shadow_report_command
from volsched.daemon.config.database_path import database_path_problem
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.overrides import address_problem, apply_overrides
from volsched.daemon.config.shadow import with_shadow

T = TypeVar("T")


def cmd_simulate(args: argparse.Namespace) -> int:
    run = decide_snapshot(args)
    if output_format(args) == "json":
        json.dump(simulation_json(run.outcomes, run.volumes), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(simulation_table(run.outcomes, run.volumes))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    args.pod = live.pod_key(args, os.environ)
    run = decide_snapshot(args)
    for outcome in run.outcomes:
        if outcome.pod.meta.key == args.pod:
            break
    else:
        pod = run.cluster.pods.get(args.pod)
        if pod is None:
            raise ConfigError(f"pod {args.pod} is not in the snapshot")
        raise ConfigError(f"pod {args.pod} is not pending (it runs on {pod.node_name or '?'})")
    nodes = [info.name for info in run.cluster.node_list()]
    report = explain_json(outcome, run.profile_for(outcome.pod), sorted(nodes), run.cluster.nodes)
    if output_format(args) == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(explain_table(report))
    return 0


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from volsched.daemon.kube.client import KubeClient
    from volsched.daemon.runtime.app import DaemonOptions, open_daemon
    from volsched.daemon.runtime.running import run_until_signalled
    from volsched.daemon.runtime.sd_notify import Notifier
    from volsched.daemon.telemetry.startup import StartupTimeline

    startup = StartupTimeline()
    startup.mark("imported")
    settings = apply_overrides(
        load_settings(args.config, feature_gates=args.feature_gates),
        {
            "http_address": args.http_address,
            "scheduler_name": args.scheduler_name,
            "database": args.database,
            "leader_elect": args.leader_elect,
        },
        os.environ,
    )
    settings = with_shadow(settings, args.shadow)
    _configure_logging(args.verbose)
    kubeconfig = args.kubeconfig or settings.kubeconfig

    # From here a SIGTERM is a request to stop, answered once the loop runs: the store
    # may be opening, and it closes cleanly.
    asked: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: asked.append(signum))

    async def until_stopped(step: Awaitable[T], stop: asyncio.Event) -> T | None:
        """``step``, unless a stop is asked for first (then None)."""
        work = asyncio.ensure_future(step)
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if work.done():
            return work.result()
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        return None

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        if asked:
            return
        client = await until_stopped(KubeClient.connect(kubeconfig), stop)
        if client is None:
            return
        startup.mark("connected")
        try:
            options = DaemonOptions(startup=startup)
            daemon = await until_stopped(open_daemon(settings, client, options), stop)
            if daemon is None:
                return
            await run_until_signalled(daemon, stop, Notifier(os.environ))
        finally:
            await client.close()

    asyncio.run(main())
    return 0


def cmd_webhook(args: argparse.Namespace) -> int:
    from volsched.daemon.http.tls_files import ReloadingTLS
    from volsched.daemon.http.webhook import RoutingWebhook
    from volsched.daemon.kube.client import KubeClient
    from volsched.scheduling.routing import RoutingRules

    settings = load_settings(args.config)
    _configure_logging(args.verbose)
    hook = settings.webhook
    if args.address is not None:
        problem = address_problem(args.address)
        if problem is not None:
            raise ConfigError(f"--address: {problem}")
    cert_file = args.cert_file or hook.cert_file
    key_file = args.key_file or hook.key_file
    if not cert_file or not key_file:
        raise ConfigError(
            "webhook: the API server calls webhooks over HTTPS only; give webhook.certFile "
            "and webhook.keyFile (or --cert-file and --key-file)"
        )
    tls = ReloadingTLS(cert_file, key_file)
    rules = RoutingRules(
        scheduler_name=hook.scheduler_name or settings.scheduler_name,
        storage_classes=frozenset(hook.storage_classes),
        provisioners=frozenset(hook.provisioners),
    )
    address = args.address or hook.address
    kubeconfig = args.kubeconfig or settings.kubeconfig

    async def main() -> None:
        client = await KubeClient.connect(kubeconfig)
        webhook = RoutingWebhook(
            client.read_only(), rules, tls, lookup_timeout_seconds=hook.lookup_timeout_seconds
        )
        try:
            port = await webhook.start(address)
            logging.getLogger("volsched.webhook").info(
                "routing pods to %s on port %d", rules.scheduler_name, port
            )
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await webhook.stop()
            await client.close()

    asyncio.run(main())
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from volsched.cache.store import check_and_migrate, check_file

    if args.database is not None and (problem := database_path_problem(args.database)):
        raise ConfigError(f"--database: {problem}")
    path = args.database or load_settings(args.config).database.path
    if args.check:
        report = check_file(path)
        for line in report.lines():
            print(line)
        return 0 if report.healthy else 1
    prepared = check_and_migrate(path)
    verdict = prepared.result
    if verdict.state == "rebuilt":
        print(f"{path}: unusable ({verdict.reason}); moved to {verdict.moved_to}")
        print(f"{path}: rebuilt, schema at revision {prepared.revision}")
    else:
        print(f"{path}: schema verified at revision {prepared.revision}")
    for problem in prepared.tolerated:
        print(f"{path}: {problem}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from volsched.daemon.cli.demo import run_demo

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(run_demo())


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="volsched",
        description="A storage-aware Kubernetes scheduler.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run the scheduler daemon against a cluster")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or in-cluster)")
    run.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    run.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="kube-scheduler feature gates (StorageCapacityScoring)",
    )
    run.add_argument(
        "--http-address",
        metavar="HOST:PORT",
        help="health, metrics and extender endpoint (env VOLSCHED_HTTP_ADDRESS)",
    )
    run.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="the schedulerName this daemon serves (env VOLSCHED_SCHEDULER_NAME)",
    )
    run.add_argument(
        "--database", metavar="PATH", help="SQLite cache and journal (env VOLSCHED_DATABASE)"
    )
    add_boolean_flag(
        run, "--leader-elect", help="take part in leader election (env VOLSCHED_LEADER_ELECT)"
    )
    run.add_argument(
        "--shadow",
        action="store_true",
        help="decide other schedulers' pods without writing anything and report agreement "
        "(shadow.enabled)",
    )
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.set_defaults(handler=cmd_run)
    webhook = commands.add_parser(
        "webhook", help="serve the admission webhook that routes storage pods to volsched"
    )
    webhook.add_argument(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or in-cluster)"
    )
    webhook.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    webhook.add_argument("--address", metavar="HOST:PORT", help="listen address (webhook.address)")
    webhook.add_argument("--cert-file", metavar="PEM", help="TLS certificate (webhook.certFile)")
    webhook.add_argument("--key-file", metavar="PEM", help="TLS key (webhook.keyFile)")
    webhook.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    webhook.set_defaults(handler=cmd_webhook)
    demo = commands.add_parser(
        "demo", help="run volsched against an embedded cluster and show where pods go"
    )
    demo.set_defaults(handler=cmd_demo)
    migrate = commands.add_parser("migrate", help="create or upgrade the SQLite database schema")
    migrate.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    migrate.add_argument("--database", metavar="PATH", help="database file (overrides config)")
    migrate.add_argument(
        "--check",
        action="store_true",
        help="read every row and report what is wrong, changing nothing (exit 1 if anything is)",
    )
    migrate.set_defaults(handler=cmd_migrate)
    simulate = commands.add_parser(
        "simulate", help="decide every pending pod of a snapshot and print where it goes"
    )
    add_snapshot_options(simulate)
    live.add_cluster_options(simulate)
    simulate.set_defaults(handler=cmd_simulate)
    explain = commands.add_parser(
        "explain", help="show, node by node, why a pod goes where it goes or stays pending"
    )
    explain.add_argument("pod", metavar="NAMESPACE/POD")
    add_snapshot_options(explain)
    live.add_cluster_options(explain)
    explain.set_defaults(handler=cmd_explain)
    live.register(commands)
    add_shadow_report_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args)
    except VolschedError as exc:
        print(f"volsched: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (``volsched simulate … | head``): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    return status


if __name__ == "__main__":
    sys.exit(main())
