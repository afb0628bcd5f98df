"""Shadow mode from the command line: the ``shadow`` config section and ``--shadow``,
and ``volsched shadow-report`` reading a saved report. Each mistake is one line naming
the file, key or URL, exit status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.cache.errors import ConfigError
from volsched.daemon.cli.main import main
from volsched.daemon.config.loading import settings_from_data
from volsched.daemon.config.settings import ShadowSettings
from volsched.daemon.config.shadow import with_shadow
from volsched.scheduling.shadow.comparison import Cause, Comparison, Outcome
from volsched.scheduling.shadow.tally import ShadowTally


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, ShadowSettings()),
        ({"shadow": None}, ShadowSettings()),
        ({"shadow": {"enabled": True}}, ShadowSettings(True, ("default-scheduler",))),
        (
            {"shadow": {"enabled": True, "schedulerNames": ["a", "b", "a"]}},
            ShadowSettings(True, ("a", "b")),
        ),
    ],
)
def test_the_shadow_section(data: dict[str, Any], expected: ShadowSettings) -> None:
    assert settings_from_data(data, "c.yaml").shadow == expected


@pytest.mark.parametrize(
    ("shadow", "message"),
    [
        ([], "c.yaml: shadow: must be a mapping"),
        ({"enable": True}, "c.yaml: shadow.enable: unknown key"),
        ({"enabled": "yes"}, "c.yaml: shadow.enabled: must be true or false"),
        ({"schedulerNames": []}, "c.yaml: shadow.schedulerNames: must be a non-empty list"),
        ({"schedulerNames": "default"}, "c.yaml: shadow.schedulerNames: must be a non-empty list"),
        ({"schedulerNames": [""]}, "c.yaml: shadow.schedulerNames: must be a non-empty list"),
    ],
)
def test_each_mistake_names_the_key(shadow: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{message}"):
        settings_from_data({"shadow": shadow}, "c.yaml")


def test_the_flag_turns_shadow_mode_on_over_the_file() -> None:
    settings = settings_from_data({"shadow": {"schedulerNames": ["batch"]}}, "c.yaml")
    assert not settings.shadow.enabled
    assert with_shadow(settings, True).shadow == ShadowSettings(True, ("batch",))
    assert with_shadow(settings, False).shadow == settings.shadow


def test_a_shadow_never_shadows_volsched_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"schedulerName": "default-scheduler"}))
    assert main(["run", "--shadow", "--config", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"volsched: {path}: shadow.schedulerNames: default-scheduler is the schedulerName "
        "volsched serves; a shadow compares with another scheduler's bindings"
    )


def saved_report(tmp_path: Path) -> Path:
    tally = ShadowTally(["default-scheduler"])
    tally.record(Comparison("ns/a", "default-scheduler", "n1", "n1", Outcome.AGREED, (), 0))
    tally.record(
        Comparison(
            "ns/b",
            "default-scheduler",
            "n2",
            "n1",
            Outcome.REJECTED,
            ("Insufficient cpu",),
            cause=Cause.REJECTED,
            rejected_by="NodeResourcesFit",
        )
    )
    tally.record(
        Comparison(
            "ns/db-0",
            "default-scheduler",
            "n2",
            "n1",
            Outcome.LOWER_SCORE,
            score_gap=40,
            cause=Cause.STORAGE_PREFERENCE,
            differing=("PrioritizeVolumes",),
            stranded=(91 * 2**30, 2**30),
            off_node=(1, 0),
        )
    )
    tally.storage.pending_for_volumes.update({"ns/db-1": True, "ns/db-2": False})
    path = tmp_path / "report.json"
    path.write_text(json.dumps(tally.report()))
    return path


def test_a_saved_report_as_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shadow-report", "--file", str(saved_report(tmp_path))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Pods bound by default-scheduler, compared with volsched's decision: 3"
    assert any(line.split()[:3] == ["agreed", "1", "33.3%"] for line in lines)
    assert any(line.split()[:3] == ["rejected", "1", "33.3%"] for line in lines)
    assert "Agreement (same node or tied): 33.3%" in lines
    assert any(line.split() == ["1", "Insufficient", "cpu"] for line in lines)
    assert any(line.split()[:5] == ["ns/b", "n2", "n1", "rejected", "rejected"] for line in lines)
    assert any(line.split() == ["1", "storage-preference"] for line in lines)
    assert any(
        line.split()
        == ["ns/db-0", "n2", "n1", "lower_score", "storage-preference", "40", "PrioritizeVolumes"]
        for line in lines
    )
    assert (
        "Capacity stranded beyond the claims' requests (1 claim pods): theirs 91.0 GiB, "
        "volsched's 1.0 GiB, saved 90.0 GiB"
    ) in lines
    assert (
        "Replicated volumes without a replica on the pod's node (1 pods): theirs 1, volsched's 0"
    ) in lines
    assert (
        "Claim pods pending for want of a PV: 2, of which volsched's placements would have served 1"
    ) in lines


def test_a_saved_report_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = saved_report(tmp_path)
    assert main(["shadow-report", "--file", str(path), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(path.read_text())


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not a shadow report (not JSON)"),
        ("[1, 2]", "not a shadow report (not a JSON object)"),
        ('{"outcomes": {}}', "not a shadow report (rejectionReasons is missing or malformed)"),
        (
            '{"outcomes": {"agreed": "x"}, "rejectionReasons": {}, "differences": []}',
            "not a shadow report (outcomes must be counts)",
        ),
    ],
)
def test_a_file_that_is_not_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, problem: str
) -> None:
    path = tmp_path / "r.json"
    path.write_text(content)
    assert main(["shadow-report", "--file", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"volsched: {path}: {problem}"


def test_unreachable_url_and_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["shadow-report", "--file", str(tmp_path / "none.json")]) == 2
    assert "none.json: cannot read: No such file or directory" in capsys.readouterr().err
    # A port nothing listens on (the discard port on loopback is never served here).
    url = "http://127.0.0.1:9/shadow/report"
    assert main(["shadow-report", "--url", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"volsched: {url}: cannot read the report:") and err.count("\n") == 1
