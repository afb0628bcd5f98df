"""Reading a policy file from disk (the parsing and validation are pure, in
``volsched.scheduling.policy``)."""

from __future__ import annotations

import json

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import FileLimitError, read_bounded
from volsched.cache.json_limits import JsonLimitError, loads_bounded
from volsched.scheduling.policy import PolicySpec, parse_policy


def load_policy_file(path: str) -> PolicySpec:
    try:
        raw = read_bounded(path)
    except FileLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = loads_bounded(raw)
    except JsonLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    return parse_policy(data, path)
