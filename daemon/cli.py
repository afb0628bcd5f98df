"""``volsched``: the command line.

    volsched run [--kubeconfig FILE] [--config FILE]
    volsched demo
    volsched migrate [--config FILE | --database PATH]
    volsched simulate FILE... [--policy P] [--config C] [--seed N] [--now T] [-o json|table]
    volsched explain NAMESPACE/POD FILE... [same options]

Exit status 0 when the snapshot was read (pods may still be pending), 2 with one line on
stderr for anything the user can fix (unreadable file, malformed object, bad policy or
config).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError, VolschedError
from volsched.cache.objects.fields import parse_time
from volsched.daemon.config import Settings, load_settings
from volsched.daemon.policy_file import load_policy_file
from volsched.daemon.report import explain_json, explain_table, simulation_json, simulation_table
from volsched.daemon.snapshot_files import load_snapshot
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import PolicySpec, default_policy
from volsched.scheduling.profile_builder import PluginSet, build_profile
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.simulation import PodOutcome, simulate
from volsched.scheduling.storage_placement import ReplicaContext


@dataclass(slots=True)
class Run:
    cluster: ClusterCache
    profile: Profile
    outcomes: list[PodOutcome]
    volumes: list[dict[str, Any]]


def _policy(args: argparse.Namespace, settings: Settings, cluster: ClusterCache) -> PolicySpec:
    path = args.policy or settings.policy_file
    if path:
        return load_policy_file(path)
    return default_policy(with_storage=bool(cluster.custom.get("StorageNode")))


def _now(args: argparse.Namespace) -> float:
    if args.now is None:
        return time.time()
    try:
        return parse_time(args.now)
    except ValueError as exc:
        raise ConfigError(f"--now: {exc}") from None


def decide_snapshot(args: argparse.Namespace) -> Run:
    now = _now(args)
    settings = load_settings(args.config)
    cluster = load_snapshot(args.files)
    spec = _policy(args, settings, cluster)
    replicas = ReplicaContext(cluster, settings.replica_scheduling, clock=lambda: now)
    plugins = PluginSet(cluster, storage_provisioners(replicas))
    profile = build_profile(spec, plugins, settings.percentage_of_nodes_to_score)
    scheduler = Scheduler(cluster, profile, random.Random(args.seed))
    result = simulate(cluster, scheduler, replicas)
    return Run(cluster, profile, result.pods, result.volumes)


def _add_snapshot_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="YAML or JSON snapshot files")
    parser.add_argument("--policy", metavar="POLICY.json", help="scheduler Policy file")
    parser.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    parser.add_argument("--seed", type=int, default=None, help="seed for breaking score ties")
    parser.add_argument("--now", metavar="RFC3339", help="the clock for time-based rules")
    parser.add_argument(
        "-o",
        "--output",
        choices=("json", "table"),
        default=None,
        help="output format (default: table on a terminal, json otherwise)",
    )


def _output_format(args: argparse.Namespace) -> str:
    if args.output:
        return str(args.output)
    return "table" if sys.stdout.isatty() else "json"


def cmd_simulate(args: argparse.Namespace) -> int:
    run = decide_snapshot(args)
    if _output_format(args) == "json":
        json.dump(simulation_json(run.outcomes, run.volumes), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(simulation_table(run.outcomes, run.volumes))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    if "/" not in args.pod:
        raise ConfigError(f"{args.pod}: give the pod as NAMESPACE/NAME")
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
    report = explain_json(outcome, run.profile, sorted(nodes))
    if _output_format(args) == "json":
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
    from volsched.daemon.app import open_daemon, run_until_signalled
    from volsched.daemon.kube_client import KubeClient
    from volsched.daemon.sd_notify import Notifier

    settings = load_settings(args.config)
    _configure_logging(args.verbose)
    kubeconfig = args.kubeconfig or settings.kubeconfig

    async def main() -> None:
        client = await KubeClient.connect(kubeconfig)
        try:
            daemon = await open_daemon(settings, client)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            await run_until_signalled(daemon, stop, Notifier(os.environ))
        finally:
            await client.close()

    asyncio.run(main())
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from volsched.cache.store import migrate

    path = args.database or load_settings(args.config).database.path
    revision = migrate(path)
    print(f"{path}: schema at revision {revision}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from volsched.daemon.demo import run_demo

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(run_demo())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="volsched",
        description="A storage-aware Kubernetes scheduler.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run the scheduler daemon against a cluster")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or in-cluster)")
    run.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    run.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    run.set_defaults(handler=cmd_run)
    demo = commands.add_parser(
        "demo", help="run volsched against an embedded cluster and show where pods go"
    )
    demo.set_defaults(handler=cmd_demo)
    migrate = commands.add_parser("migrate", help="create or upgrade the SQLite database schema")
    migrate.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    migrate.add_argument("--database", metavar="PATH", help="database file (overrides config)")
    migrate.set_defaults(handler=cmd_migrate)
    simulate = commands.add_parser(
        "simulate", help="decide every pending pod of a snapshot and print where it goes"
    )
    _add_snapshot_options(simulate)
    simulate.set_defaults(handler=cmd_simulate)
    explain = commands.add_parser(
        "explain", help="show, node by node, why a pod goes where it goes or stays pending"
    )
    explain.add_argument("pod", metavar="NAMESPACE/POD")
    _add_snapshot_options(explain)
    explain.set_defaults(handler=cmd_explain)
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
