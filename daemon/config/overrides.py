"""Flags and environment variables over the config file, and the checks of a listen
address they share with it."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.daemon.config.database_path import (
    database_directory_problem,
    database_path_problem,
)
from volsched.daemon.config.settings import (
    DatabaseSettings,
    Settings,
)

# Flags of ``volsched run`` and the environment variables that stand for them when no flag
# is given, so a container runs without a config file. Precedence: flag, environment,
# file, default.
OVERRIDE_ENVIRONMENT = {
    "http_address": "VOLSCHED_HTTP_ADDRESS",
    "scheduler_name": "VOLSCHED_SCHEDULER_NAME",
    "database": "VOLSCHED_DATABASE",
    "leader_elect": "VOLSCHED_LEADER_ELECT",
}


def parse_boolean(value: str, where: str) -> bool:
    """``true`` or ``false``, exactly: "yes" or "1" may read as true to one tool and be
    refused by the next, so neither the flag nor its variable takes them."""
    if value in ("true", "false"):
        return value == "true"
    raise ConfigError(f"{where}: must be true or false, not {value[:40]!r}")


def apply_overrides(
    settings: Settings, flags: Mapping[str, str | None], environ: Mapping[str, str]
) -> Settings:
    """Flags (``--http-address`` ...) and their environment variables over the file; the
    database's directory checked, whichever gave the path."""
    values: dict[str, tuple[str, str]] = {}
    for key, variable in OVERRIDE_ENVIRONMENT.items():
        flag = flags.get(key)
        if flag is not None:
            values[key] = (flag, "--" + key.replace("_", "-"))
        elif environ.get(variable):
            values[key] = (environ[variable], variable)
    changes: dict[str, Any] = {}
    if "http_address" in values:
        address, where = values["http_address"]
        problem = address_problem(address)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
        if not settings.http.authentication.enabled and not is_loopback(address):
            raise ConfigError(
                f"{where}: http.authentication.enabled is false, which only a loopback "
                f"address allows, not {address}"
            )
        changes["http"] = replace(settings.http, address=address)
    if "database" in values:
        path, where = values["database"]
        problem = database_path_problem(path)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")
        changes["database"] = DatabaseSettings(path)
    database, where = values.get("database") or (
        settings.database.path,
        f"{settings.source}: database.path",
    )
    problem = database_directory_problem(database)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    if "leader_elect" in values:
        text, where = values["leader_elect"]
        changes["leader_election"] = replace(
            settings.leader_election, enabled=parse_boolean(text, where)
        )
    if "scheduler_name" in values:
        name, where = values["scheduler_name"]
        if not name:
            raise ConfigError(f"{where}: must not be empty")
        changes["scheduler_name"] = name
        if len(settings.profiles) > 1:
            raise ConfigError(
                f"{where}: the config has {len(settings.profiles)} profiles, each with its "
                "schedulerName; set the names there"
            )
        if settings.profiles:
            changes["profiles"] = (replace(settings.profiles[0], scheduler_name=name),)
    return replace(settings, **changes) if changes else settings


def address_problem(address: str) -> str | None:
    """Why ``host:port`` cannot be listened on (None when it looks right).

    Only the form is checked here; a host that does not resolve or a port in use is
    reported when the daemon binds. The port is ASCII digits (``str.isdigit`` also takes
    Arabic-Indic and other digits, which ``int`` reads but no resolver does), and an IPv6
    host is written in brackets, as in ``[::1]:10351``.
    """
    shown = address if len(address) <= 80 else address[:80] + "…"
    host, colon, port = address.rpartition(":")
    if not colon:
        return f"must be HOST:PORT, not {shown!r}"
    if not (port.isascii() and port.isdigit()):
        return f"port must be a number, not {port[:20]!r}"
    if len(port) > 5 or not 0 <= int(port) <= 65535:
        return f"port must be between 0 and 65535, not {port[:20]}"
    if host.startswith("[") or host.endswith("]"):
        if not (host.startswith("[") and host.endswith("]")):
            return f"unbalanced brackets in {shown!r}"
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return f"{host!r} is not an IPv6 address in brackets"
    elif ":" in host:
        return f"an IPv6 host goes in brackets, as in [::1]:{port}, not {shown!r}"
    if any(character.isspace() for character in host):
        return f"the host must not contain spaces: {shown!r}"
    return None


def is_loopback(address: str) -> bool:
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
