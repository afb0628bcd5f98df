"""Serving TLS from a certificate and key on disk, picking up renewed files.

cert-manager, kubelet-mounted Secrets and hand rotation all replace the files in place;
a long-running server must start using the new pair without a restart. The
``SSLContext`` given to the listening socket stays the same object and is loaded again
when either file changes (checked on a timer): new connections get the new certificate,
open ones finish with the old. A pair that fails to load (half written, mismatched)
keeps the previous one serving and is logged once per change.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass

from volsched.cache.errors import ConfigError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Stamp:
    cert: tuple[int, int, int]
    key: tuple[int, int, int]


def _stamp_of(path: str) -> tuple[int, int, int]:
    # Secrets mounted by the kubelet swap a symlink: stat follows it to the new file.
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size, status.st_ino


class ReloadingTLS:
    """An SSLContext for a server, reloaded when its certificate or key file changes."""

    def __init__(self, cert_file: str, key_file: str, check_seconds: float = 10.0) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.check_seconds = check_seconds
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.reloads = 0
        try:
            self._stamp = self._read_stamp()
            self.context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"{cert_file}, {key_file}: cannot load the TLS certificate and key: {exc}"
            ) from None
        self._failed: _Stamp | None = None

    def _read_stamp(self) -> _Stamp:
        return _Stamp(_stamp_of(self.cert_file), _stamp_of(self.key_file))

    def reload_if_changed(self) -> bool:
        """Load the pair again if either file changed; True when the new pair serves."""
        try:
            stamp = self._read_stamp()
        except OSError as exc:
            log.warning("TLS files unreadable, keeping the current certificate: %s", exc)
            return False
        if stamp == self._stamp or stamp == self._failed:
            return False
        try:
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            self._failed = stamp
            log.warning("new TLS certificate not loaded, keeping the current one: %s", exc)
            return False
        self._stamp = stamp
        self._failed = None
        self.reloads += 1
        log.info("TLS certificate reloaded from %s", self.cert_file)
        return True

    async def watch(self) -> None:
        """Check the files every ``check_seconds`` until cancelled."""
        while True:
            await asyncio.sleep(self.check_seconds)
            self.reload_if_changed()
