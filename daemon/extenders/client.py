"""Calling one HTTP extender, as kube-scheduler's HTTPExtender does.

``POST {urlPrefix}/{verb}`` with a JSON body, bounded by the extender's
``httpTimeout`` from connecting to the last value decoded, the answer bounded in size
and nesting (``answers``); anything but 200 with a JSON answer of the verb's shape is an
``ExtenderError`` whose text is what kube-scheduler would say ("failed filter with
extender at URL …, code 500", ``Post "…": context deadline exceeded``), so an operator
can search it. TLS follows upstream's transport: ``enableHTTPS`` without a CA skips
verification, a given CA replaces the system's, ``serverName`` overrides the name
checked, and a client certificate comes from files or inline data.

Every call is counted and timed per extender and verb (``telemetry.metrics``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import aiohttp

from volsched.cache.errors import ConfigError
from volsched.daemon.extenders.answers import (
    MAX_ANSWER_BYTES,
    AnswerTooLarge,
    decode_answer,
    read_answer,
    shortened,
)
from volsched.daemon.extenders.wire import (
    BadRequest,
    FilterAnswer,
    Victims,
    binding_args,
    binding_error,
    extender_args,
    filter_answer,
    host_priorities,
    preemption_answer,
    preemption_args,
)
from volsched.daemon.telemetry.metrics import Metrics
from volsched.scheduling.extender_config import ExtenderSpec, TLSSpec

T = TypeVar("T")


class ExtenderError(Exception):
    """A call that failed, or the extender's own ``Error``: the message users see, made
    one line of a line's length (an extender's text can be megabytes, aiohttp's span
    lines)."""

    def __init__(self, message: str, timed_out: bool = False) -> None:
        super().__init__(shortened(" ".join(message.split())))
        self.timed_out = timed_out


def tls_context(spec: ExtenderSpec, where: str = "") -> ssl.SSLContext | None:
    """The client TLS of one extender (None for plain HTTP). Raises ``ConfigError``
    naming ``where`` (the file and the extender's entry) for a certificate or key that
    cannot be loaded."""
    if not spec.url_prefix.startswith("https://"):
        return None
    tls = spec.tls or TLSSpec()
    try:
        if tls.has_ca:
            context = ssl.create_default_context(
                cafile=tls.ca_file or None,
                cadata=tls.ca_data.decode("ascii", "replace") if tls.ca_data else None,
            )
        else:
            context = ssl.create_default_context()
        if tls.insecure or (spec.enable_https and not tls.has_ca):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if tls.cert_file or tls.key_file:
            context.load_cert_chain(tls.cert_file, tls.key_file or None)
        elif tls.cert_data:
            _load_inline_pair(context, tls.cert_data, tls.key_data)
    except (OSError, ssl.SSLError, ValueError) as exc:
        field = f"{where}.tlsConfig" if where else f"extender {spec.name}: tlsConfig"
        raise ConfigError(f"{field}: {exc}") from None
    return context


def _load_inline_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``certData``/``keyData``: the ssl module reads pairs from files only, so they go
    through a private temporary directory that is removed at once."""
    with tempfile.TemporaryDirectory(prefix="volsched-extender-") as directory:
        cert_path = os.path.join(directory, "cert.pem")
        key_path = os.path.join(directory, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key or cert)):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
        context.load_cert_chain(cert_path, key_path)


class ExtenderClient:
    """One configured extender: its verbs as coroutines over a shared HTTP session."""

    def __init__(
        self,
        spec: ExtenderSpec,
        session: aiohttp.ClientSession,
        context: ssl.SSLContext | None,
        metrics: Metrics | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self.spec = spec
        self.session = session
        self.ssl = context
        self.metrics = metrics
        self.max_answer_bytes = max_answer_bytes

    @property
    def name(self) -> str:
        return self.spec.name

    @contextlib.contextmanager
    def _observed(self, verb: str) -> Iterator[None]:
        started = time.monotonic()
        result = "success"
        try:
            yield
        except ExtenderError as exc:
            result = "timeout" if exc.timed_out else "error"
            raise
        finally:
            if self.metrics is not None:
                self.metrics.extender_requests.labels(self.name, verb, result).inc()
                self.metrics.extender_duration.labels(self.name, verb).observe(
                    time.monotonic() - started
                )

    async def _send(self, action: str, args: Mapping[str, Any], shape: Callable[[Any], T]) -> T:
        """The answer, decoded and read by ``shape`` (a parser of ``wire``): connecting,
        sending, reading, decoding and checking all inside the extender's
        ``httpTimeout``, the answer bounded (``answers``). ``shape``'s ``BadRequest``
        passes through."""
        url = self.spec.url_prefix.rstrip("/") + "/" + action
        server_name = self.spec.tls.server_name if self.spec.tls is not None else ""
        phase = "awaiting headers"
        try:
            async with (
                asyncio.timeout(self.spec.http_timeout_seconds),
                self.session.post(
                    url,
                    json=args,
                    ssl=self.ssl if self.ssl is not None else True,
                    server_hostname=server_name or None,
                ) as response,
            ):
                phase = "reading body"
                if response.status != 200:
                    response.close()  # whatever it says, it is not read
                    raise ExtenderError(
                        f"failed {action} with extender at URL {url}, code {response.status}"
                    )
                data = await read_answer(response, self.max_answer_bytes)
                phase = "decoding body"
                return await decode_answer(data, self.max_answer_bytes, shape)
        except TimeoutError:
            # Go's words before the headers; the same form for reading and decoding.
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while {phase})',
                timed_out=True,
            ) from None
        except AnswerTooLarge as exc:
            raise ExtenderError(f"extender at URL {url} answered {action} wrongly: {exc}") from None
        except aiohttp.ClientError as exc:
            raise ExtenderError(f'Post "{url}": {exc or type(exc).__name__}') from None
        except (ValueError, RecursionError) as exc:
            raise ExtenderError(
                f"extender at URL {url} answered {action} with bad JSON: {exc}"
            ) from None

    def _bad_answer(self, verb: str, problem: BadRequest) -> ExtenderError:
        return ExtenderError(f"extender {self.name} answered {verb} wrongly: {problem}")

    def _args(
        self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], names: Sequence[str]
    ) -> dict[str, Any]:
        """Whole nodes, or only their names for a node-cache-capable extender."""
        if self.spec.node_cache_capable:
            return extender_args(pod, node_names=list(names))
        return extender_args(pod, nodes=list(nodes))

    async def filter(
        self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], names: Sequence[str]
    ) -> FilterAnswer:
        """ExtenderArgs → ExtenderFilterResult. An extender ``Error`` raises, and so does
        a node-cache-capable extender keeping a node it was not given (upstream's
        check)."""
        with self._observed("filter"):
            try:
                answer = await self._send(
                    self.spec.filter_verb, self._args(pod, nodes, names), filter_answer
                )
            except BadRequest as exc:
                raise self._bad_answer("filter", exc) from None
            if answer.error:
                raise ExtenderError(answer.error)
            given = set(names)
            for name in answer.kept:
                if name not in given:
                    raise ExtenderError(
                        f"extender {self.name!r} claims a filtered node {name!r} which is "
                        "not found in the input node list"
                    )
            return answer

    async def prioritize(
        self, pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], names: Sequence[str]
    ) -> list[tuple[str, int]]:
        with self._observed("prioritize"):
            try:
                return await self._send(
                    self.spec.prioritize_verb, self._args(pod, nodes, names), host_priorities
                )
            except BadRequest as exc:
                raise self._bad_answer("prioritize", exc) from None

    async def preempt(
        self,
        pod: Mapping[str, Any],
        victims: Mapping[str, Victims],
        pods_by_uid: Mapping[str, Mapping[str, Any]],
    ) -> dict[str, Victims]:
        """ExtenderPreemptionArgs → the candidates the extender keeps, victims by UID
        (whole pods are sent unless the extender is node-cache-capable)."""
        whole = None if self.spec.node_cache_capable else pods_by_uid
        with self._observed("preempt"):
            try:
                return await self._send(
                    self.spec.preempt_verb, preemption_args(pod, victims, whole), preemption_answer
                )
            except BadRequest as exc:
                raise self._bad_answer("preempt", exc) from None

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """ExtenderBindingArgs → ExtenderBindingResult; raises unless the extender
        bound the pod."""
        with self._observed("bind"):
            try:
                error = await self._send(
                    self.spec.bind_verb, binding_args(namespace, name, uid, node), binding_error
                )
            except BadRequest as exc:
                raise self._bad_answer("bind", exc) from None
            if error:
                raise ExtenderError(error)


class Extenders:
    """The configured extenders, in upstream's order of calling: those that must answer
    first, the ignorable ones after (kube-scheduler's buildExtenders)."""

    def __init__(
        self,
        specs: Sequence[ExtenderSpec],
        metrics: Metrics | None = None,
        source: str = "(config)",
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        self._session: aiohttp.ClientSession | None = None
        # TLS material is read now, so a bad certificate stops the start with one line.
        contexts = {
            spec: tls_context(spec, f"{source}: extenders[{index}]")
            for index, spec in enumerate(specs)
        }
        ordered = [s for s in specs if not s.ignorable] + [s for s in specs if s.ignorable]
        self._contexts = [contexts[spec] for spec in ordered]
        self._ordered = ordered
        self._metrics = metrics
        self._max_answer_bytes = max_answer_bytes
        self._clients: list[ExtenderClient] | None = None

    @property
    def clients(self) -> list[ExtenderClient]:
        """Made on first use, inside the running loop (aiohttp needs one)."""
        if self._clients is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=None),
                connector=aiohttp.TCPConnector(limit=64),
            )
            self._clients = [
                ExtenderClient(spec, self._session, context, self._metrics, self._max_answer_bytes)
                for spec, context in zip(self._ordered, self._contexts, strict=True)
            ]
        return self._clients

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            self._clients = None
