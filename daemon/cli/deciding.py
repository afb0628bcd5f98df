"""Deciding on a snapshot — files, or a live cluster read-only — for ``simulate`` and
``explain``: the profiles from the config, the clock, and one scheduling pass."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.cache.objects.core import Pod
from volsched.cache.objects.fields import parse_time
from volsched.daemon.cli import live
from volsched.daemon.cli.flag_values import ascii_integer
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.policy_file import load_policy_file
from volsched.daemon.config.settings import Settings
from volsched.scheduling.extender_config import ignored_by_scheduler, with_ignored_resources
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.profile_builder import PluginFactory, build_profile
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
        # replicated storage, with a configuration as without one; the resources an
        # extender manages for the scheduler are not checked by NodeResourcesFit.
        ignored = ignored_by_scheduler(settings.extenders)
        return tuple(
            replace(spec, policy=with_ignored_resources(spec.policy_for(storage), ignored))
            for spec in settings.profiles
        )
    return (
        default_profile(
            with_storage=storage,
            scheduler_name=settings.scheduler_name,
            gates=settings.feature_gates,
        ),
    )


def _now(args: argparse.Namespace) -> float:
    if args.now is None:
        return time.time()
    try:
        return parse_time(args.now)
    except ValueError as exc:
        raise ConfigError(f"--now: {exc}") from None


def decide_snapshot(args: argparse.Namespace) -> Run:
    now = _now(args)
    settings = load_settings(args.config, feature_gates=getattr(args, "feature_gates", None))
    if settings.extenders:
        # Offline there is nobody to call: say so once, and decide without them.
        names = ", ".join(spec.name for spec in settings.extenders)
        print(
            f"warning: extenders are not called offline, decided without: {names}", file=sys.stderr
        )
    cluster = live.load_cluster(args, os.environ)
    replicas = ReplicaContext(cluster, settings.replica_scheduling, clock=lambda: now)
    checks = storage_provisioners(replicas)
    rng = random.Random(args.seed)
    profiles: dict[str, Profile] = {}
    schedulers: dict[str, Scheduler] = {}
    for spec in _profiles(args, settings, cluster):
        profile = build_profile(
            spec.policy,
            PluginFactory(cluster, checks),
            spec.percentage(settings.percentage_of_nodes_to_score),
        )
        profiles[spec.scheduler_name] = profile
        schedulers[spec.scheduler_name] = Scheduler(cluster, profile, rng)
    result = simulate(cluster, schedulers, replicas)
    return Run(cluster, profiles, result.pods, result.volumes)


def add_snapshot_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="YAML or JSON snapshot files (none: read the live cluster of the kubeconfig)",
    )
    parser.add_argument("--policy", metavar="POLICY.json", help="scheduler Policy file")
    parser.add_argument("--config", metavar="CONFIG.yaml", help="volsched config file")
    parser.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        help="kube-scheduler feature gates (StorageCapacityScoring)",
    )
    parser.add_argument(
        "--seed", type=ascii_integer, default=None, help="seed for breaking score ties"
    )
    parser.add_argument("--now", metavar="RFC3339", help="the clock for time-based rules")
    parser.add_argument(
        "-o",
        "--output",
        choices=("json", "table"),
        default=None,
        help="output format (default: table on a terminal, json otherwise)",
    )


def output_format(args: argparse.Namespace) -> str:
    if args.output:
        return str(args.output)
    return "table" if sys.stdout.isatty() else "json"
