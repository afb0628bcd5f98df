"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) → volsched profiles.

Read as kube-scheduler 1.36 reads it: ``apiVersion`` first (``versions``), the top-level
fields (``document``), each profile's plugin sets by upstream's merge rules
(``plugin_sets``) and each plugin's arguments with upstream's defaults and limits
(``plugin_args``), compiled to the ``PolicySpec`` a legacy Policy file gives
(``profile``). ``extenders`` holds the one place the extenders list is read.

Every mistake is one ``ConfigError`` naming the document, the profile and the field.
"""

from volsched.scheduling.scheduler_config.catalog import (
    API_VERSION,
    DEFAULT_BIND_TIMEOUT_SECONDS,
    DEFAULT_MULTI_POINT,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    IN_TREE_LIMITS,
    KIND,
    PLUGINS,
    REMOVED_IN_V1,
    STORAGE_MULTI_POINT,
    UNAVAILABLE,
    PluginKind,
    default_plugins,
)
from volsched.scheduling.scheduler_config.document import (
    SchedulerConfiguration,
    is_scheduler_configuration,
    parse_scheduler_configuration,
)
from volsched.scheduling.scheduler_config.leader_election import LeaderElection
from volsched.scheduling.scheduler_config.profile import (
    ProfileSpec,
    compile_profile,
    default_profile,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_BIND_TIMEOUT_SECONDS",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "IN_TREE_LIMITS",
    "KIND",
    "PLUGINS",
    "REMOVED_IN_V1",
    "STORAGE_MULTI_POINT",
    "UNAVAILABLE",
    "LeaderElection",
    "PluginKind",
    "ProfileSpec",
    "SchedulerConfiguration",
    "compile_profile",
    "default_plugins",
    "default_profile",
    "is_scheduler_configuration",
    "parse_scheduler_configuration",
]
