"""API errors, answered as ``kind: Status`` JSON exactly as a real API server shapes them.

Every failure inside the emulator is an ``ApiError``; the HTTP layer turns it into a
Status body with the same ``code``, ``reason``, ``message`` and ``details`` a client
would get from kube-apiserver, so a client's error handling is exercised for real.
Messages copy upstream's wording so they can be searched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from volsched.emulator.raw import Raw

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def reason_for(code: int) -> str:
    return REASONS.get(code, "Unknown" if code >= 400 else "")


def status_body(
    code: int, reason: str, message: str, details: Raw | None = None, success: bool = False
) -> Raw:
    body: Raw = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if success else "Failure",
    }
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details:
        body["details"] = details
    body["code"] = code
    return body


@dataclass
class ApiError(Exception):
    code: int
    reason: str
    message: str
    details: Raw = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> Raw:
        return status_body(self.code, self.reason, self.message, self.details)


def _details(group_resource: str, name: str) -> Raw:
    plural, _, group = group_resource.partition(".")
    details: Raw = {"name": name} if name else {}
    if group:
        details["group"] = group
    details["kind"] = plural
    return details


def not_found(group_resource: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{group_resource} "{name}" not found', _details(group_resource, name)
    )


def already_exists(group_resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{group_resource} "{name}" already exists',
        _details(group_resource, name),
    )


def conflict(group_resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {group_resource} "{name}": {why}',
        _details(group_resource, name),
    )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed() -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


@dataclass(frozen=True, slots=True)
class FieldError:
    """One entry of a 422: upstream's ``field.Error``, rendered the same way."""

    field: str
    type: str  # "Required value", "Invalid value", "Forbidden", "Unsupported value"
    detail: str = ""
    value: Any = None

    _REASONS: ClassVar[dict[str, str]] = {
        "Required value": "FieldValueRequired",
        "Invalid value": "FieldValueInvalid",
        "Forbidden": "FieldValueForbidden",
        "Unsupported value": "FieldValueNotSupported",
    }

    def body(self) -> str:
        text = self.type
        if self.type in ("Invalid value", "Unsupported value"):
            text += f": {_go_quote(self.value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> Raw:
        return {
            "reason": self._REASONS.get(self.type, "FieldValueInvalid"),
            "message": self.body(),
            "field": self.field,
        }


def _go_quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    return str(value)


def invalid(qualified_kind: str, name: str, errors: list[FieldError]) -> ApiError:
    """A 422 as ``NewInvalid`` builds it: ``Kind "name" is invalid: [e1, e2]``."""
    text = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    kind, _, group = qualified_kind.partition(".")
    details: Raw = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = [error.cause() for error in errors]
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {text}', details)
