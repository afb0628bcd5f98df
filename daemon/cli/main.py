"""``volsched``: the command line.

    volsched run [--kubeconfig FILE] [--config FILE]
    volsched webhook [--kubeconfig FILE] [--config FILE] [--address A] [--cert-file F --key-file F]
    volsched demo
    volsched migrate [--config FILE | --database PATH] [--check]
    volsched simulate FILE... [--policy P] [--config C] [--seed N] [--now T] [-o json|table]
    volsched explain NAMESPACE/POD FILE... [same options]

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
import random
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError, VolschedError
from volsched.cache.objects.core import Pod
from volsched.cache.objects.fields import parse_time
from volsched.daemon.cli.report import (
    explain_json,
    explain_table,
    simulation_json,
    simulation_table,
)
from volsched.daemon.cli.snapshot_files import load_snapshot
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.overrides import address_problem, apply_overrides
from volsched.daemon.config.policy_file import load_policy_file
from volsched.daemon.config.settings import Settings
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.profile_builder import PluginSet, build_profile
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.scheduler_config import ProfileSpec, default_profile
from volsched.scheduling.simulation import PodOutcome, simulate
from volsched.scheduling.storage_placement import ReplicaContext


@dataclass(slots=True)
class Run:
    cluster: ClusterCache
    profiles: dict[str, Profile]
    outcomes: list[PodOutcome]
    volumes: list[dict[str, Any]]

    def profile_for(self, pod: Pod) -> Profile:
        return self.profiles.get(pod.scheduler_name) or next(iter(self.profiles.values()))


def _profiles(
    args: argparse.Namespace, settings: Settings, cluster: ClusterCache
) -> tuple[ProfileSpec, ...]:
    """A Policy file, else the config's KubeSchedulerConfiguration profiles, else the
    default profile (with the storage plugins when the snapshot runs replicated storage)."""
    path = args.policy or settings.policy_file
    if path:
        if settings.profiles:
            raise ConfigError(
                f"{path}: a Policy file and a KubeSchedulerConfiguration's profiles "
                "cannot both be given; keep one"
            )
        return (ProfileSpec(settings.scheduler_name, load_policy_file(path)),)
    storage = bool(cluster.storage.storage_nodes)
    if settings.profiles:
        # The storage plugins the defaults add join only where the snapshot runs
        # replicated storage, with a configuration as without one.
        return tuple(
            replace(profile, policy=profile.policy_for(storage)) for profile in settings.profiles
        )
    return (default_profile(with_storage=storage, scheduler_name=settings.scheduler_name),)


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
    replicas = ReplicaContext(cluster, settings.replica_scheduling, clock=lambda: now)
    checks = storage_provisioners(replicas)
    rng = random.Random(args.seed)
    profiles: dict[str, Profile] = {}
    schedulers: dict[str, Scheduler] = {}
    for spec in _profiles(args, settings, cluster):
        profile = build_profile(
            spec.policy, PluginSet(cluster, checks), settings.percentage_of_nodes_to_score
        )
        profiles[spec.scheduler_name] = profile
        schedulers[spec.scheduler_name] = Scheduler(cluster, profile, rng)
    result = simulate(cluster, schedulers, replicas)
    return Run(cluster, profiles, result.pods, result.volumes)


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
    report = explain_json(outcome, run.profile_for(outcome.pod), sorted(nodes), run.cluster.nodes)
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
    from volsched.daemon.kube.client import KubeClient
    from volsched.daemon.runtime.app import open_daemon
    from volsched.daemon.runtime.running import run_until_signalled
    from volsched.daemon.runtime.sd_notify import Notifier

    settings = apply_overrides(
        load_settings(args.config),
        {
            "http_address": args.http_address,
            "scheduler_name": args.scheduler_name,
            "database": args.database,
            "leader_elect": args.leader_elect,
        },
        os.environ,
    )
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
    parser = argparse.ArgumentParser(
        prog="volsched",
        description="A storage-aware Kubernetes scheduler.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run the scheduler daemon against a cluster")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or in-cluster)")
    run.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
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
    run.add_argument(
        "--leader-elect",
        metavar="true|false",
        help="take part in leader election (env VOLSCHED_LEADER_ELECT)",
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
