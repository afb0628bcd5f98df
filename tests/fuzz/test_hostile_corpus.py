"""Every file the command line reads, through the hostile corpus (``corpus.py``): each
case must end as a result (exit 0) or as exit 2 with one stderr line naming the file —
never a traceback, never a hang. Run in-process, each case under a deadline.

``VOLSCHED_FUZZ_EXAMPLES`` above its default spreads more of the corpus's values over
every leaf (see ``sizes.py``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fuzz.corpus import json_mutants, whole_files, yaml_mutants
from tests.fuzz.sizes import EXAMPLES
from volsched.cache.errors import VolschedError
from volsched.daemon.cli.main import main
from volsched.daemon.http.tls import self_signed_pair
from volsched.daemon.kube.client import KubeClient

ROOT = Path(__file__).resolve().parent.parent.parent
DEADLINE_SECONDS = 10.0
# Hostile values per leaf: 8 by default; every one of them with VOLSCHED_FUZZ_EXAMPLES=2000.
PER_LEAF = max(8, EXAMPLES // 30)


class Hang(BaseException):
    """A case ran past its deadline."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class Tally:
    cases: int = 0
    refused: int = 0
    accepted: int = 0
    failures: list[str] | None = None

    def __post_init__(self) -> None:
        self.failures = []

    def fail(self, what: str) -> None:
        assert self.failures is not None
        self.failures.append(what)

    def check(self) -> None:
        assert self.failures is not None
        # Shown with ``pytest -s``: the size of the corpus and how it ended.
        print(
            f"\n{self.cases} cases: {self.accepted} results, {self.refused} refused "
            f"with one line, {len(self.failures)} failures"
        )
        assert self.failures == [], f"{len(self.failures)} of {self.cases}:\n" + "\n".join(
            self.failures[:40]
        )


def run_cli(tally: Tally, name: str, argv: list[str], *named: object) -> None:
    """``volsched ARGV`` in-process: a result, or exit 2 with one line naming one of
    ``named`` (the file, or the flag)."""
    tally.cases += 1
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    try:
        with (
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
            deadline(DEADLINE_SECONDS),
        ):
            status = main(argv)
    except Hang:
        tally.fail(f"{name}: no answer in {DEADLINE_SECONDS:.0f} s")
        return
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else 2
    except BaseException as error:  # a traceback: the exception left main
        tally.fail(f"{name}: {type(error).__name__}: {str(error)[:120]}")
        return
    seconds = time.monotonic() - started
    text = err.getvalue()
    if status == 0:
        tally.accepted += 1
        if "Traceback" in text:
            tally.fail(f"{name}: exit 0 with a traceback")
        return
    tally.refused += 1
    lines = text.strip().splitlines()
    if status != 2 or len(lines) != 1 or not any(str(n) in lines[0] for n in named):
        tally.fail(f"{name}: exit {status}, {len(lines)} line(s): {text[:200]!r}")
    elif seconds > DEADLINE_SECONDS / 2:
        tally.fail(f"{name}: {seconds:.1f} s")


def through(
    tally: Tally,
    tmp_path: Path,
    cases: Iterator[tuple[str, bytes | str]],
    argv: Callable[[Path], list[str]],
) -> None:
    path = tmp_path / "hostile"
    for name, content in cases:
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        run_cli(tally, name, argv(path), path)


# -- snapshots ---------------------------------------------------------------------------

LABELS = {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a", "app": "db"}
SELECTOR = {"matchLabels": {"app": "db"}}
TERM = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}


def snapshot_documents() -> list[Any]:
    core: list[Any] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": LABELS, "resourceVersion": "3"},
            "spec": {"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110, "ephemeral-storage": 1e9},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "db-0",
                "namespace": "shop",
                "labels": {"app": "db"},
                "creationTimestamp": "2024-01-01T00:00:00Z",
                "resourceVersion": "7",
            },
            "spec": {
                "priority": 1000,
                "priorityClassName": "high",
                "overhead": {"cpu": "100m"},
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
                "containers": [
                    {
                        "name": "c",
                        "resources": {"requests": {"cpu": "500m", "memory": 1073741824}},
                        "ports": [{"hostPort": 8080, "protocol": "TCP"}],
                    }
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
                "tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": 30}],
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 10, "preference": TERM}
                        ]
                    },
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 50,
                                "podAffinityTerm": {
                                    "labelSelector": SELECTOR,
                                    "topologyKey": "kubernetes.io/hostname",
                                },
                            }
                        ]
                    },
                },
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "minDomains": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": SELECTOR,
                    }
                ],
            },
            "status": {"phase": "Pending", "startTime": "2024-01-01T00:00:01Z"},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "local": {"path": "/mnt/a"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [TERM]}},
            },
            "status": {"phase": "Available"},
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "shop"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "resources": {"requests": {"storage": "5Gi"}},
            },
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}
            ],
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap", "namespace": "kube-system"},
            "storageClassName": "local",
            "capacity": "100Gi",
            "maximumVolumeSize": "50Gi",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "d", "nodeID": "n1", "allocatable": {"count": 10}}]},
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": "shop"},
            "spec": {"selector": SELECTOR},
            "status": {"disruptionsAllowed": 1, "disruptedPods": {"db-1": "2024-01-01T00:00:00Z"}},
        },
    ]
    seen: set[tuple[str, str]] = set()
    storage: list[Any] = []
    for example in ("hyperconverged.yaml", "longhorn.yaml"):
        for document in yaml.safe_load_all((ROOT / "examples" / example).read_text()):
            if not isinstance(document, dict) or document.get("apiVersion") == "v1":
                continue
            identity = (document["apiVersion"], document["kind"])
            if identity not in seen and document["kind"] != "StorageClass":
                seen.add(identity)
                storage.append(document)
    return core + storage


def test_snapshot_corpus(tmp_path: Path) -> None:
    documents = snapshot_documents()
    base = yaml.safe_dump_all(documents)
    tally = Tally()
    (tmp_path / "base").write_text(base)
    run_cli(tally, "base", ["simulate", "-o", "json", str(tmp_path / "base")], tmp_path)
    assert tally.accepted == 1, tally.failures
    cases = [*yaml_mutants(documents, PER_LEAF), *whole_files(base)]
    cases += [(f"json {name}", text) for name, text in json_mutants(documents[1], 3)]
    through(tally, tmp_path, iter(cases), lambda path: ["simulate", "-o", "json", str(path)])
    tally.check()
    assert tally.cases > 1900 and tally.accepted > 100


# -- config files ------------------------------------------------------------------------


def config_documents(tmp_path: Path) -> list[Any]:
    own = {
        "database": {"path": str(tmp_path / "v.db")},
        "http": {
            "address": "127.0.0.1:10351",
            "authentication": {"enabled": True, "cacheTTLSeconds": 10},
            "maxConnections": 256,
            "idleTimeoutSeconds": 30,
        },
        "replicaScheduling": yaml.safe_load((ROOT / "examples" / "config.yaml").read_text())[
            "replicaScheduling"
        ],
        "tracing": {"otlpEndpoint": "http://127.0.0.1:4317"},
        "extender": {"pathPrefix": "/scheduler", "localityPoints": False},
        "webhook": {"address": "0.0.0.0:9443", "storageClasses": ["local"]},
    }
    scheduler = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "parallelism": 16,
        "percentageOfNodesToScore": 50,
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 10,
        "leaderElection": {"leaderElect": True, "leaseDuration": "15s", "resourceName": "vs"},
        "profiles": [
            {
                "schedulerName": "volsched",
                "plugins": {
                    "score": {
                        "enabled": [{"name": "NodeAffinity", "weight": 2}],
                        "disabled": [{"name": "ImageLocality"}],
                    }
                },
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {
                            "scoringStrategy": {
                                "type": "MostAllocated",
                                "resources": [{"name": "cpu", "weight": 1}],
                            }
                        },
                    },
                    {
                        "name": "PodTopologySpread",
                        "args": {
                            "defaultingType": "List",
                            "defaultConstraints": [
                                {
                                    "maxSkew": 1,
                                    "topologyKey": "topology.kubernetes.io/zone",
                                    "whenUnsatisfiable": "ScheduleAnyway",
                                }
                            ],
                        },
                    },
                    {"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 600}},
                ],
            }
        ],
    }
    return [own, scheduler]


def test_config_corpus(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(snapshot_documents()[:5]))
    documents = config_documents(tmp_path)
    base = yaml.safe_dump_all(documents)
    tally = Tally()
    (tmp_path / "base").write_text(base)
    run_cli(
        tally, "base", ["simulate", str(snapshot), "--config", str(tmp_path / "base")], tmp_path
    )
    assert tally.accepted == 1, tally.failures
    cases = [*yaml_mutants(documents, 3 * PER_LEAF), *whole_files(base)]
    cases.append(("mixed unknown keys", "1: a\nzebra: b\nnull: c\n2.5: d\n"))
    cases.append(("mixed unknown keys inside", "http: {3: x, y: z, null: 1}\n"))
    through(
        tally,
        tmp_path,
        iter(cases),
        lambda path: ["simulate", str(snapshot), "-o", "json", "--config", str(path)],
    )
    tally.check()
    assert tally.cases > 1300


# -- policy files ------------------------------------------------------------------------


def test_policy_corpus(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(snapshot_documents()[:5]))
    policy = json.loads((ROOT / "examples" / "policy.json").read_text())
    base = json.dumps(policy)
    tally = Tally()
    cases = [*json_mutants(policy, 3 * PER_LEAF), *whole_files(base)]
    through(
        tally,
        tmp_path,
        iter(cases),
        lambda path: ["simulate", str(snapshot), "-o", "json", "--policy", str(path)],
    )
    tally.check()
    assert tally.cases > 350


# -- kubeconfigs -------------------------------------------------------------------------


def kubeconfig_document(tmp_path: Path) -> Any:
    (tmp_path / "tls").mkdir()
    certificate, _ = self_signed_pair(tmp_path / "tls", ["localhost"])
    authority = base64.b64encode(certificate.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": authority,
                },
            }
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
        "preferences": {},
    }


async def connect(tally: Tally, name: str, path: Path) -> None:
    """``KubeClient.connect`` as ``volsched run`` calls it: a client, or one
    ``VolschedError`` naming the file."""
    tally.cases += 1
    try:
        with deadline(DEADLINE_SECONDS):
            client = await KubeClient.connect(str(path))
    except Hang:
        tally.fail(f"{name}: no answer in {DEADLINE_SECONDS:.0f} s")
    except VolschedError as error:
        tally.refused += 1
        if "\n" in str(error) or str(path) not in str(error):
            tally.fail(f"{name}: {str(error)[:200]!r}")
    except BaseException as error:
        tally.fail(f"{name}: {type(error).__name__}: {str(error)[:120]}")
    else:
        tally.accepted += 1
        await client.close()


async def test_kubeconfig_corpus(tmp_path: Path) -> None:
    document = kubeconfig_document(tmp_path)
    base = yaml.safe_dump(document)
    tally = Tally()
    path = tmp_path / "kubeconfig"
    cases = [*yaml_mutants([document], 3 * PER_LEAF), *whole_files(base)]
    for name, content in cases:
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        await connect(tally, name, path)
    await asyncio.sleep(0)
    tally.check()
    assert tally.cases > 300 and tally.accepted > 10


# -- flags and the environment -----------------------------------------------------------

ADDRESSES = [
    "127.0.0.1:99999",
    "127.0.0.1:65536",
    "127.0.0.1:-1",
    "127.0.0.1:http",
    "127.0.0.1:",
    "127.0.0.1:" + "1" * 5000,
    "127.0.0.1:٨٠",
    "127.0.0.1:８０",
    "127.0.0.1:8 0",
    "[::1:80",
    "[::1]x:80",
    "[nope]:80",
    "::1:80",
    "[::1]:80",
    "host name:80",
    "10351",
    "",
    ":0",
    "localhost:0",
    "\x00:80",
    "x" * 10000 + ":80",
]


@pytest.mark.parametrize("source", ["flag", "environment"])
def test_http_address_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """Every address is refused, or accepted and followed by the kubeconfig's own error —
    and in both cases before the database exists."""
    database = tmp_path / "v.db"
    missing = tmp_path / "no-such-kubeconfig"
    tally = Tally()
    for address in ADDRESSES:
        argv = ["run", "--kubeconfig", str(missing), "--database", str(database)]
        if source == "flag":
            argv += ["--http-address", address]
            named = "--http-address"
        else:
            if "\x00" in address:
                continue  # no environment variable holds a NUL
            monkeypatch.setenv("VOLSCHED_HTTP_ADDRESS", address)
            named = "VOLSCHED_HTTP_ADDRESS"
        run_cli(tally, repr(address)[:40], argv, named, missing)
        assert not database.exists()
    tally.check()


@pytest.mark.parametrize(
    "argv",
    [
        ["--now", "0001-01-01 00:00:00"],
        ["--now", "0000-01-01T00:00:00Z"],
        ["--now", "2024-01-01T00:00:00+99:00"],
        ["--now", "٢٠٢٤-01-01T00:00:00Z"],
        ["--now", "1" * 5000],
        ["--seed", "1" * 4000],
    ],
)
def test_snapshot_flags(tmp_path: Path, argv: list[str]) -> None:
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump_all(snapshot_documents()[:5]))
    tally = Tally()
    run_cli(tally, " ".join(argv)[:40], ["simulate", str(snapshot), "-o", "json", *argv], argv[0])
    tally.check()
