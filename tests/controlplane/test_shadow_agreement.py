"""The shadow agreement benchmark (``bench.oracle.shadow_agreement``) on a small cluster.

It needs the real binaries in ``VOLSCHED_KUBE_ASSETS`` (docs/guides/oracle.md); without them
the module is skipped. A small run (12 nodes, 60 pods, every kind of pod the big run has)
proves the benchmark measures what it claims: kube-scheduler binds the pods, the shadow
compares every one it binds, every difference counted is listed with its pod's kind, the
pods kube-scheduler leaves pending are ones volsched cannot place either, and volsched wrote
nothing to the cluster. The agreement floor is what small runs show today (every run so far
agreed on every pod); the big run's target is 0.99.
"""

from __future__ import annotations

from pathlib import Path

from bench.oracle.shadow_agreement import AGREEING, AgreementRun, run_benchmark, summary_line
from tests.controlplane import required_assets

ASSETS = required_assets()

RUN = AgreementRun(nodes=12, pods=60, seed=1, settle_seconds=6.0, timeout_seconds=300.0)


def test_small_run_compares_every_bound_pod_and_agrees(tmp_path: Path) -> None:
    assert ASSETS is not None
    result = run_benchmark(RUN, ASSETS, tmp_path)
    print(summary_line(result))

    assert not result["timed_out"]
    # kube-scheduler decided every pod: bound, or pending with a FailedScheduling event.
    assert result["bound"] + result["left_pending"] == RUN.pods
    assert result["bound"] >= RUN.pods * 0.9
    # The shadow compared every pod kube-scheduler bound, and nothing else.
    assert result["compared"] == result["bound"]
    assert sum(result["outcomes"].values()) == result["compared"]
    assert result["outcomes"]["error"] == 0
    assert result["outcomes"]["unknown_node"] == 0

    agreeing = sum(result["outcomes"][outcome] for outcome in AGREEING)
    assert result["agreement_ratio"] == round(agreeing / result["compared"], 4)
    assert result["agreement_ratio"] == result["report_agreement_ratio"]
    assert result["agreement_ratio"] >= 0.9, result["differences"]
    # Every difference the report counted is listed, with what kind of pod it was.
    assert result["differences_listed"] == result["differences_counted"]
    assert all(d["kind"] and d["constraints"] for d in result["differences"])

    # The pods kube-scheduler left pending, volsched would not place either.
    assert result["pending_verdicts"]["placeable"] == 0
    assert result["pending_verdicts"]["unschedulable"] == result["left_pending"]

    # Shadow mode writes nothing: no Event from volsched, no field volsched manages.
    writes = result["volsched_writes"]
    assert writes["wrote_nothing"], writes
    # ...and the check can see writers: the benchmark's own writes are listed.
    assert any(m.startswith("Python-urllib") for m in writes["field_managers"])


# volsched told to pack (MostAllocated) while kube-scheduler spreads (LeastAllocated): the
# profile is named apart from default-scheduler, which a shadow refuses to serve itself.
PACKING: dict[str, object] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {
            "schedulerName": "volsched-packing-check",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}},
                }
            ],
        }
    ],
}


def test_a_known_difference_shows_as_disagreement(tmp_path: Path) -> None:
    """The benchmark can fail: a shadow scoring differently is caught and every difference
    is listed with its pod's kind and both nodes."""
    assert ASSETS is not None
    run = AgreementRun(
        nodes=12,
        pods=40,
        seed=1,
        settle_seconds=6.0,
        timeout_seconds=300.0,
        volsched_configuration=PACKING,
    )
    result = run_benchmark(run, ASSETS, tmp_path)
    print(summary_line(result))

    assert not result["same_configuration"]
    assert result["compared"] == result["bound"]
    assert result["outcomes"]["lower_score"] > 0
    assert result["agreement_ratio"] < 0.9
    assert result["differences_listed"] == result["differences_counted"]
    for difference in result["differences"]:
        assert difference["kind"] and difference["constraints"]
        assert difference["theirNodeInfo"]["zone"] in ("zone-a", "zone-b", "zone-c")
        if difference["outcome"] == "lower_score":
            assert difference["scoreGap"] > 0
            assert difference["ourNodeInfo"] is not None
    assert result["volsched_writes"]["wrote_nothing"]


def test_claim_pods_are_compared_and_agree_with_the_same_profile(tmp_path: Path) -> None:
    """WaitForFirstConsumer claim pods (local PVs of mixed sizes, a claim each) among the
    others: kube-scheduler binds their claims in PreBind before the pod, and the shadow,
    deciding with the same profile, still compares every bound pod and agrees.

    The pods come slower than the benchmark's 20 a second: a claim pod's PreBind waits
    about a second for the PV binder, and kube-scheduler decides the pods created in that
    second with the claim pod assumed on its node while the shadow, which sees only
    bindings, does not count it (and judges the claim pod itself a second late). At 20 a
    second that alone costs a small run its agreement floor (0.79 at seed 1); here each
    pod is decided after the one before is bound."""
    assert ASSETS is not None
    run = AgreementRun(
        nodes=10,
        pods=40,
        seed=1,
        rate=0.8,
        settle_seconds=6.0,
        timeout_seconds=300.0,
        wffc_pods=10,
    )
    result = run_benchmark(run, ASSETS, tmp_path)
    print(summary_line(result))

    assert not result["timed_out"]
    assert result["volsched_profile"] == "kube" and result["same_configuration"]
    assert result["workload"]["claim_pods"] == 10 and result["workload"]["pvs"] >= 20
    claims = result["claim_pods"]
    assert claims["created"] == 10
    assert claims["bound"] + claims["left_pending"] == 10
    assert claims["bound"] >= 9
    # Every bound pod is compared, the claim pods among them.
    assert result["compared"] == result["bound"]
    assert claims["compared"] == claims["bound"]
    assert result["outcomes"]["error"] == 0
    assert sum(result["causes"].values()) == result["compared"]
    # The same profile: nothing of volsched's own storage preference can show.
    assert result["causes"].get("storage-preference", 0) == 0
    assert result["agreement_ratio"] >= 0.9, result["differences"]
    assert result["differences_listed"] == result["differences_counted"]
    for difference in result["differences"]:
        assert "cause" in difference and difference["kind"]
        if "claim" in difference:
            assert difference["theirPv"] and difference["theirPvGiB"] >= difference["claimGiB"]
    assert result["volsched_writes"]["wrote_nothing"], result["volsched_writes"]
