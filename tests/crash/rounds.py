"""One crash round: an API server of its own, a workload arriving in batches, and a daemon
killed with SIGKILL at a chosen point in each life, then restarted — as the same replica,
another one with its own (stale) database, or a new one with an empty database.

A kill point is a write kind of the binding cycle (PV prebind, selected-node annotation,
Replica create, pod binding) or of its undo and recovery (PV release, annotation
removal, Replica delete), a side (just before the write is applied, or just after it was
applied and before the daemon reads the answer) and an ordinal (the n-th such write of
the life). The emulator's tripwire kills the leader there. Points are drawn at random,
the least hit so far the likeliest; a point the life never reaches is a miss, not a hit.

After the last life the round lets a last daemon run until the workload has settled,
waits for the controllers to finish, and checks ``invariants`` on the API objects.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from tests.crash.daemons import DaemonProcess, Replica, launch
from tests.crash.invariants import State, open_writes, unconverged, violations
from tests.crash.workload import NAMESPACE, Workload, base_objects, expected_writes, manifests
from tests.integration.conftest import crds
from volsched.emulator import ApiServer, ControllerSettings, WriteRequest, write_kubeconfig

BINDING_POINTS = ("prebind PV", "annotate claim", "create Replica", "bind pod")
UNDO_POINTS = ("release PV", "release claim", "delete Replica")
POINTS = BINDING_POINTS + UNDO_POINTS
# Generous: two cores shared with other test runs.
LIFE_SECONDS = 60.0
CONVERGE_SECONDS = 90.0
POLL_SECONDS = 0.05
CONTROLLER_DELAYS = (0.05, 0.2, 1.0, 3.0)

_PATHS = {
    ("PUT", re.compile(r"/api/v1/persistentvolumes/[^/]+")): "PV",
    ("PUT", re.compile(r"/api/v1/namespaces/[^/]+/persistentvolumeclaims/[^/]+")): "annotate claim",
    (
        "PATCH",
        re.compile(r"/api/v1/namespaces/[^/]+/persistentvolumeclaims/[^/]+"),
    ): "release claim",
    ("POST", re.compile(r"/apis/volsched\.io/v1alpha1/replicas")): "create Replica",
    ("DELETE", re.compile(r"/apis/volsched\.io/v1alpha1/replicas/[^/]+")): "delete Replica",
    ("POST", re.compile(r"/api/v1/namespaces/[^/]+/pods/[^/]+/binding")): "bind pod",
}


def classify(write: WriteRequest) -> str | None:
    """The kill point a write belongs to, None for writes outside binding and recovery
    (leases, events, pod conditions)."""
    for (method, pattern), point in _PATHS.items():
        if write.method == method and pattern.fullmatch(write.path):
            if point != "PV":
                return point
            spec = write.body.get("spec") if isinstance(write.body, dict) else None
            return "prebind PV" if isinstance(spec, dict) and spec.get("claimRef") else "release PV"
    return None


@dataclass(frozen=True, slots=True)
class Hit:
    """A kill that happened: at which point, and whether the daemon was still recovering
    (no binding-cycle write yet in this process) or running binding cycles."""

    point: str
    after: bool
    recovering: bool
    status: int | None

    @property
    def where(self) -> str:
        return f"{'after' if self.after else 'before'} {self.point}"

    @property
    def label(self) -> str:
        return self.where + (" (recovery)" if self.recovering else "")


@dataclass(slots=True)
class RoundResult:
    index: int
    seed: int
    workdir: Path
    hits: list[Hit] = field(default_factory=list)
    misses: int = 0
    restarts: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    unconverged: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    tracebacks: int = 0
    pods: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return bool(self.violations or self.unconverged or self.problems)


class CrashRound:
    def __init__(
        self, index: int, seed: int, kills: int, workdir: Path, coverage: Counter[str]
    ) -> None:
        self.rng = Random(seed)
        self.kills = kills
        self.workdir = workdir
        self.coverage = coverage
        self.result = RoundResult(index, seed, workdir)
        self.controllers = ControllerSettings(
            pv_bind_delay_seconds=self.rng.choice(CONTROLLER_DELAYS),
            provision_delay_seconds=self.rng.choice(CONTROLLER_DELAYS),
            replica_sync_delay_seconds=0.05,
        )
        self.server = ApiServer(controllers=self.controllers, bookmark_interval_seconds=0.5)
        self.workload = Workload(self.rng)
        self.kubeconfig = workdir / "kubeconfig"
        self.replicas: list[Replica] = []
        self.current: DaemonProcess | None = None
        self.processes: list[DaemonProcess] = []
        # The kill points of the writes the current process made, oldest first.
        self.process_writes: list[str] = []
        # What the round did, each line tagged with the request log's length then.
        self.trace: list[str] = []

    def note(self, text: str) -> None:
        self.trace.append(f"[{len(self.server.faults.request_log)}] {text}")

    async def run(self) -> RoundResult:
        started = time.monotonic()
        self.workdir.mkdir(parents=True, exist_ok=True)
        await self.server.start()
        try:
            self.server.load(crds())
            self.server.load(base_objects())
            write_kubeconfig(self.kubeconfig, self.server.url)
            for life in range(self.kills):
                if not await self._life(life):
                    break
            await self._finish()
        finally:
            for process in self.processes:
                process.kill()
                await process.wait()
            await self.server.stop()
        self.result.tracebacks = sum(
            process.log.read_text(errors="replace").count("Traceback") for process in self.processes
        )
        self.result.pods = len(self.workload.pods)
        self.result.seconds = time.monotonic() - started
        if self.result.failed:
            self._keep_evidence()
        else:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return self.result

    def _keep_evidence(self) -> None:
        """What a failed round leaves beside the daemons' logs: its own trace, every
        request the API server served, and the objects as they ended."""
        (self.workdir / "trace.txt").write_text("\n".join(self.trace) + "\n")
        (self.workdir / "requests.txt").write_text(
            "".join(
                f"{i} {r.method} {r.path} {r.status}\n"
                for i, r in enumerate(self.server.faults.request_log)
            )
        )
        state = self._state()
        objects = {
            "pods": state.pods,
            "claims": state.claims,
            "pvs": state.pvs,
            "replicas": self.server.list("Replica"),
            "events": self.server.list("Event", NAMESPACE, api_version="events.k8s.io/v1"),
        }
        (self.workdir / "objects.json").write_text(json.dumps(objects, indent=1))

    # -- one life ----------------------------------------------------------------------

    async def _life(self, life: int) -> bool:
        """Add a batch, arm a tripwire, run until it fires or all is settled; False when
        the round cannot go on (a daemon died on its own, or nothing settles)."""
        batch = self.workload.batch(life)
        objects = [obj for plan in batch for obj in manifests(plan)]
        early = self.rng.random() < 0.5
        if early:
            self.server.load(objects)
        point, after, nth = self._choose(expected_writes(batch))
        hits: list[Hit] = []
        fired = asyncio.Event()

        def matches(write: WriteRequest) -> bool:
            kind = classify(write)
            if kind is None:
                return False
            self.process_writes.append(kind)
            return kind == point

        async def kill(write: WriteRequest, status: int | None) -> None:
            # Everything that matters happens before the first await: the server may
            # cancel this handler as soon as the daemon's connection drops.
            recovering = point in UNDO_POINTS and not any(
                kind in BINDING_POINTS for kind in self.process_writes[:-1]
            )
            hits.append(Hit(point, after, recovering, status))
            self.note(f"kill {hits[-1].label} {write.method} {write.path} -> {status}")
            fired.set()
            victim = self.current
            if victim is not None:
                victim.kill()
                await victim.wait()

        tripwire = self.server.faults.trip(matches, kill, nth=nth, after=after)
        self.note(
            f"life {life}: {len(batch)} pod(s); armed {'after' if after else 'before'} {point} #{nth}"
        )
        if self.current is None:
            # Down for a while (the controllers may finish what the dead daemon began),
            # except when the recovery's own writes are the target.
            if point not in UNDO_POINTS:
                await asyncio.sleep(self.rng.choice((0.0, 0.0, 0.0, 0.3, 1.0, 2.0)))
            await self._restart()
        if not early:
            self.server.load(objects)
        ended = await self._until(lambda: fired.is_set() or self._settled(), LIFE_SECONDS)
        if not fired.is_set():
            self.server.faults.disarm(tripwire)
        if hits:
            assert self.current is not None
            await self.current.wait()
            self.current = None
            self.result.hits += hits
            self.coverage[hits[0].where] += 1
            return True
        self.result.misses += 1
        self.note(f"life {life}: missed")
        if self._died_alone():
            return False
        if not ended:
            self.result.problems.append(f"life {life}: nothing settled in {LIFE_SECONDS:g}s")
            return False
        return True

    def _choose(self, expected: Counter[str]) -> tuple[str, bool, int]:
        """A kill point this life can reach: a write its batch needs, or — after a kill —
        an undo write the recovery may have to make (those are rare, so they are taken
        when they can be); the least hit so far likeliest."""
        reachable = {point: count for point, count in expected.items() if count}
        undo: set[str] = set()
        if self.current is None and self.processes:
            undo = open_writes(self._state(), self.server.list("Replica"))
        if not reachable:
            reachable["bind pod"] = 1
        after = self.rng.random() < 0.5
        side = "after" if after else "before"
        if undo and self.rng.random() < 0.75:
            reachable = dict.fromkeys(undo, 1)
        else:
            reachable.update(dict.fromkeys(undo, 1))
        points = sorted(reachable)
        weights = [1.0 / (1 + self.coverage[f"{side} {p}"]) ** 2 for p in points]
        point = self.rng.choices(points, weights)[0]
        return point, after, self.rng.randint(1, reachable[point])

    async def _restart(self) -> None:
        """Start the next life: the same replica (its database; sometimes its identity),
        another replica with its own database, or a new replica with an empty one."""
        draw = self.rng.random()
        previous = self.processes[-1] if self.processes else None
        others = [r for r in self.replicas if previous is None or r is not previous.replica]
        if previous is not None and draw < 0.4:
            replica = previous.replica
            same_identity = self.rng.random() < 0.5
            mode = "same replica, same identity" if same_identity else "same replica"
        elif others and (draw < 0.65 or len(self.replicas) >= 4):
            replica, same_identity = self.rng.choice(others), False
            mode = "another replica, its own database"
        else:
            name = f"replica-{len(self.replicas)}"
            replica, same_identity = Replica(name, self.workdir / f"{name}.db"), False
            self.replicas.append(replica)
            mode = "new replica, empty database" if previous else "first start"
        identity = (
            previous.identity
            if same_identity and previous is not None
            else f"{replica.name}-{len(self.processes)}"
        )
        self.result.restarts[mode] += 1
        self.note(f"start {identity} ({mode})")
        self.process_writes = []
        self.current = await launch(self.workdir, self.kubeconfig, replica, identity)
        self.processes.append(self.current)

    def _died_alone(self) -> bool:
        current = self.current
        if current is None or current.alive or current.killed:
            return False
        code = current.process.returncode
        self.result.problems.append(f"daemon {current.identity} exited on its own ({code})")
        return True

    # -- convergence -------------------------------------------------------------------

    async def _finish(self) -> None:
        if self.result.problems:
            return  # a daemon died on its own, or nothing settled: already reported
        if self.current is None:
            await self._restart()
        self.note("final life")
        settled = await self._until(self._settled, CONVERGE_SECONDS)
        self.note(f"settled: {settled}")
        if self._died_alone():
            return
        if not settled:
            self.result.problems.append(f"not settled within {CONVERGE_SECONDS:g}s")
        # Let the controllers finish what they had started (a lost prebind race is
        # undone by the PV controller after its delay).
        await asyncio.sleep(
            max(self.controllers.pv_bind_delay_seconds, self.controllers.provision_delay_seconds)
            + 0.5
        )
        state = self._state()
        self.result.violations = violations(state)
        self.result.unconverged = unconverged(state, self._expectations())

    def _expectations(self) -> dict[str, bool]:
        return {plan.name: plan.schedulable for plan in self.workload.pods}

    def _state(self) -> State:
        server = self.server
        return State(
            pods=server.list("Pod", NAMESPACE),
            claims=server.list("PersistentVolumeClaim", NAMESPACE),
            pvs=server.list("PersistentVolume"),
            nodes=server.list("Node"),
        )

    def _settled(self) -> bool:
        state = self._state()
        if unconverged(state, self._expectations()):
            return False
        return not open_writes(state) & {"release PV", "release claim"}

    async def _until(self, check: Callable[[], Any], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not check():
            if loop.time() > deadline or self._current_died():
                return False
            await asyncio.sleep(POLL_SECONDS)
        return True

    def _current_died(self) -> bool:
        return self.current is not None and not self.current.alive and not self.current.killed
