"""Event validation, as upstream's ``ValidateEventCreate`` does it.

core/v1 events get the legacy validation, which accepts almost anything (old clients
post minimal bodies).  events.k8s.io/v1 events get the strict one: ``eventTime``,
``reportingController``, ``reportingInstance``, ``action`` and ``reason`` are required,
``type`` is Normal or Warning, and the object's name — including a ``generateName``
prefix, which may therefore not end in "." — must be a DNS-1123 subdomain (checked with
every other kind's name in the registry; only core/v1 events are exempt).

``eventTime`` is a metav1.MicroTime: exactly six fractional digits.  A malformed one is
a decoding error (400), as upstream, where the JSON decoder rejects it before validation.

An events.k8s.io/v1 ``series`` has a ``count`` of at least 2 and a ``lastObservedTime``;
an update (or patch) of such an event may change its series and nothing else of the
event: what happened, to what, said by whom, stays as first recorded.
"""

from __future__ import annotations

import re

from volsched.emulator.errors import ApiError, FieldError, bad_request
from volsched.emulator.raw import Raw
from volsched.emulator.resources import ResourceType

MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")


def is_event(resource: ResourceType) -> bool:
    return resource.kind == "Event" and resource.group in ("", "events.k8s.io")


def strict(resource: ResourceType) -> bool:
    return resource.group == "events.k8s.io"


def decode_errors(resource: ResourceType, body: Raw) -> ApiError | None:
    """A 400 for an ``eventTime`` that is not a MicroTime, as the decoder gives."""
    value = body.get("eventTime")
    if value is None or (isinstance(value, str) and MICRO_TIME.match(value)):
        return None
    return bad_request(
        f'{resource.kind} in version "{resource.version}" cannot be handled as a {resource.kind}: '
        f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse as RFC 3339 with microseconds'
    )


# What an events.k8s.io/v1 update may not change (upstream's ValidateEventUpdate).
IMMUTABLE_FIELDS = (
    "eventTime",
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "regarding",
    "related",
    "note",
    "type",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
)


def update_errors(resource: ResourceType, old: Raw, new: Raw) -> list[FieldError]:
    if not strict(resource):
        return []
    errors = validation_errors(resource, new)
    for field in IMMUTABLE_FIELDS:
        if old.get(field) != new.get(field):
            errors.append(FieldError(field, "Invalid value", "field is immutable", new.get(field)))
    return errors


def _series_errors(event: Raw) -> list[FieldError]:
    series = event.get("series")
    if series is None:
        return []
    if not isinstance(series, dict):
        return [FieldError("series", "Invalid value", "must be an object", series)]
    errors = []
    count = series.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 2:
        errors.append(FieldError("series.count", "Invalid value", "should be at least 2", count))
    last = series.get("lastObservedTime")
    if not last:
        errors.append(FieldError("series.lastObservedTime", "Required value"))
    elif not (isinstance(last, str) and MICRO_TIME.match(last)):
        errors.append(
            FieldError("series.lastObservedTime", "Invalid value", "not a MicroTime", last)
        )
    return errors


def validation_errors(resource: ResourceType, event: Raw) -> list[FieldError]:
    if not strict(resource):
        return []
    errors = _series_errors(event)
    for field in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
        if not event.get(field):
            errors.append(FieldError(field, "Required value"))
    kind = event.get("type")
    if kind not in ("Normal", "Warning"):
        errors.append(
            FieldError("type", "Unsupported value", 'supported values: "Normal", "Warning"', kind)
        )
    for field, limit in (("action", 128), ("reason", 128), ("note", 1024)):
        value = event.get(field)
        if isinstance(value, str) and len(value) > limit:
            errors.append(
                FieldError(field, "Invalid value", f"can have at most {limit} characters", value)
            )
    return errors
