"""Which scheduling profiles the daemon runs, built over one shared cache."""

from __future__ import annotations

import random

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.daemon.config.policy_file import load_policy_file
from volsched.daemon.config.settings import Settings
from volsched.scheduling.extender_config import ignored_by_scheduler, with_ignored_resources
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import PolicySpec
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile


def profile_specs(settings: Settings) -> list[tuple[str, PolicySpec]]:
    """The profiles to run: a Policy file's one, a KubeSchedulerConfiguration's, or the
    default profile. The storage rules only act on pods with replicated volumes (they
    skip the rest), so the daemon's default always carries them. Extended resources an
    HTTP extender manages for the scheduler are not fitted by any of them."""
    if settings.policy_file:
        if settings.profiles:
            raise ConfigError(
                f"{settings.policy_file}: a Policy file and a KubeSchedulerConfiguration's "
                "profiles cannot both be given; keep one"
            )
        specs = [(settings.scheduler_name, load_policy_file(settings.policy_file))]
    elif settings.profiles:
        specs = [(profile.scheduler_name, profile.policy) for profile in settings.profiles]
    else:
        specs = [
            (
                settings.scheduler_name,
                default_profile(with_storage=True, gates=settings.feature_gates).policy,
            )
        ]
    ignored = ignored_by_scheduler(settings.extenders)
    return [(name, with_ignored_resources(policy, ignored)) for name, policy in specs]


def build_profiles(
    settings: Settings, cluster: ClusterCache, plugins: PluginFactory, seed: int | None
) -> Profiles:
    rng = random.Random(seed)
    schedulers = {}
    for name, spec in profile_specs(settings):
        # Each profile its own plugin instances (their arguments differ), one cache.
        profile_plugins = PluginFactory(cluster, plugins.provisioner_checks)
        profile = build_profile(spec, profile_plugins, _percentage(settings, name))
        schedulers[name] = Scheduler(cluster, profile, rng)
    return Profiles(schedulers)


def _percentage(settings: Settings, scheduler_name: str) -> int:
    """The profile's own percentageOfNodesToScore, else the configuration's."""
    for profile in settings.profiles:
        if profile.scheduler_name == scheduler_name:
            return profile.percentage(settings.percentage_of_nodes_to_score)
    return settings.percentage_of_nodes_to_score
