"""``extenders``: the one place the list is read. volsched does not call HTTP extenders
yet, so a non-empty list is refused here; this module is where a client of extenders
takes over."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.scheduling.scheduler_config.fields import Where, items


def refuse_extenders(body: Mapping[str, Any], where: Where) -> None:
    if items(body.get("extenders"), where.at("extenders")):
        raise where.at("extenders").fail(
            "volsched is a scheduler, not a client of extenders; remove this list"
        )
