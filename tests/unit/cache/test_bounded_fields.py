"""Numbers and times are bounded where they enter, as the API server bounds them: a
quantity past int64, an int32 field past int32, a negative overhead or a time that is
not RFC 3339 is one ``ObjectError`` naming the field — never a value that overflows a
float or a date later."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from typing import Any

import pytest

from volsched.cache.errors import ObjectError
from volsched.cache.objects.durations import go_duration_seconds
from volsched.cache.objects.fields import Fields, parse_time
from volsched.cache.objects.registry import KINDS
from volsched.cache.quantity import MAX_QUANTITY, QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("9223372036854775807", MAX_QUANTITY),
        (MAX_QUANTITY, MAX_QUANTITY),
        ("8Ei", MAX_QUANTITY),  # upstream caps a binary quantity at int64
        ("-8Ei", -MAX_QUANTITY),
        ("7Ei", 7 * 2**60),
        ("9E", 9 * 10**18),
        (1e18, 10**18),
        ("100m", Fraction(1, 10)),
    ],
)
def test_quantities_up_to_int64(value: object, expected: object) -> None:
    assert parse_quantity(value) == expected


@pytest.mark.parametrize(
    "value",
    ["9223372036854775808", "10E", "1e19", 10**19, 10**400, 1e300, -(10**19), "٤", "4\u0660"],
)
def test_quantities_past_int64_or_not_ascii_are_refused(value: object) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(value)
    assert len(str(caught.value)) < 120


def pod(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", **metadata},
        "spec": {"containers": [{"name": "c"}], **spec},
    }


SPREAD = {"topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}


@pytest.mark.parametrize(
    ("raw", "field", "problem"),
    [
        (pod({"priority": 2**31}), "spec.priority", "does not fit in an int32"),
        (pod({"priority": -(2**31) - 1}), "spec.priority", "does not fit in an int32"),
        (
            pod({"topologySpreadConstraints": [{"maxSkew": 2**31, **SPREAD}]}),
            "spec.topologySpreadConstraints[0].maxSkew",
            "does not fit in an int32",
        ),
        (
            pod({"topologySpreadConstraints": [{"maxSkew": 1, "minDomains": 2**40, **SPREAD}]}),
            "spec.topologySpreadConstraints[0].minDomains",
            "does not fit in an int32",
        ),
        (
            pod({"containers": [{"name": "c", "ports": [{"hostPort": 70000}]}]}),
            "spec.containers[0].ports[0].hostPort",
            "must be between 1 and 65535",
        ),
        (
            pod({"containers": [{"name": "c", "ports": [{"hostPort": -1}]}]}),
            "spec.containers[0].ports[0].hostPort",
            "must be between 1 and 65535",
        ),
        (
            pod({"overhead": {"cpu": "-4"}}),
            "spec.overhead.cpu",
            "must be greater than or equal to 0",
        ),
        (
            pod({"containers": [{"name": "c", "resources": {"requests": {"cpu": 10**30}}}]}),
            "spec.containers[0].resources.requests.cpu",
            "is out of range",
        ),
        (
            pod({"containers": [{"name": "c", "resources": {"limits": {"memory": "1e40"}}}]}),
            "spec.containers[0].resources.limits.memory",
            "is out of range",
        ),
        (pod({}, resourceVersion="12a"), "metadata.resourceVersion", "is not an integer"),
        (pod({}, resourceVersion="١٢"), "metadata.resourceVersion", "is not an integer"),
        (pod({}, resourceVersion=10**30), "metadata.resourceVersion", "is not an integer"),
        (
            pod({}, creationTimestamp="0001-01-01 00:00:00"),
            "metadata.creationTimestamp",
            "is not an RFC 3339 time",
        ),
        (
            pod({}, creationTimestamp="0000-01-01T00:00:00Z"),
            "metadata.creationTimestamp",
            "year 0 is out of range",
        ),
        (
            pod({}, creationTimestamp="2024-01-01T00:00:00"),
            "metadata.creationTimestamp",
            "has no time zone",
        ),
        (
            {"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "-1"}}},
            "status.allocatable.cpu",
            "must be greater than or equal to 0",
        ),
        (
            {"kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 2**31},
            "value",
            "does not fit in an int32",
        ),
    ],
)
def test_out_of_range_fields_are_named(raw: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ObjectError) as caught:
        KINDS[raw["kind"]].parse(raw)
    assert caught.value.field == field
    assert problem in caught.value.problem
    assert len(str(caught.value)) < 200


def test_the_largest_values_upstream_accepts_parse() -> None:
    view = KINDS["Pod"].parse(
        pod(
            {
                "priority": 2**31 - 1,
                "overhead": {"cpu": "0"},
                "containers": [
                    {"name": "c", "resources": {"requests": {"cpu": str(MAX_QUANTITY)}}}
                ],
            }
        )
    )
    assert view.priority == 2**31 - 1
    assert view.requests["cpu"] == MAX_QUANTITY * 1000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1970-01-01T00:00:00Z", 0.0),
        ("1970-01-01T01:00:00+01:00", 0.0),
        ("1969-12-31T23:00:00-01:00", 0.0),
        ("1970-01-01T00:00:00.25Z", 0.25),
        ("0001-01-01T00:00:00Z", -62135596800.0),
        ("0001-01-01T00:00:00+23:59", -62135596800.0 - 86340),
        ("9999-12-31T23:59:59-23:59", 253402300799.0 + 86340),
    ],
)
def test_times_at_the_ends_of_the_calendar(text: str, expected: float) -> None:
    assert parse_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-01",
        "2024-01-01 00:00:00Z",
        "2024-W01-1T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:00:00+24:00",
        "2024-02-30T00:00:00Z",
        " 2024-01-01T00:00:00Z",
        "٢٠٢٤-01-01T00:00:00Z",
    ],
)
def test_times_the_api_server_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 1),  # what a YAML loader makes of a time without a zone
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
        datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-23))),
    ],
)
def test_datetimes_from_other_loaders_never_overflow(moment: datetime) -> None:
    seconds = Fields({"t": moment}, "Pod", "p").timestamp("t")
    expected = moment.replace(tzinfo=moment.tzinfo or UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    assert seconds == expected.total_seconds()


@pytest.mark.parametrize(
    "cpu", [float("nan"), float("inf"), float("-inf"), "NaN", "Infinity", "+Inf", "1e400"]
)
def test_a_non_finite_allocatable_is_refused_naming_the_node_and_field(cpu: object) -> None:
    """What a decoder that accepts NaN and Infinity (Python's, reading a stored row) or a
    YAML file can hand the parser: refused where it enters, never a NaN in a view."""
    raw = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}
    with pytest.raises(ObjectError) as caught:
        KINDS["Node"].parse(raw)
    assert str(caught.value).startswith("Node/n1 field status.allocatable.cpu: ")


@pytest.mark.parametrize("text", ["1" + "0" * 400 + "h", "9" * 320 + "s"])
def test_a_duration_too_long_for_a_float_is_not_a_duration(text: str) -> None:
    assert go_duration_seconds(text) is None


@pytest.mark.parametrize("value", ["²", "٣", "9" * 5000, "9" * 19, "-1", "1e3"])
def test_an_integer_longhorn_setting_is_ascii_digits_of_an_int64(value: str) -> None:
    """Python's ``isdigit`` takes "²", which ``int`` then refused in every scheduling
    cycle; ``int`` refuses 5,000 digits."""
    raw = {
        "metadata": {"name": "storage-over-provisioning-percentage", "namespace": "ns"},
        "value": value,
    }
    with pytest.raises(ObjectError) as caught:
        KINDS["LonghornSetting"].parse(raw)
    assert "field value: must be a non-negative integer" in str(caught.value)
