"""The binder writes a PV or claim back whole from the revision its decision was made on:
content and resourceVersion of one revision, or no write at all."""

from __future__ import annotations

import re

import pytest

from tests.daemon.test_ingest import at_version
from tests.integration.objects import claim, local_pv
from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import Conflict
from volsched.daemon.binding.binder import chosen_body
from volsched.daemon.binding.intent import BindingFailed
from volsched.daemon.watch.ingest import Ingest


@pytest.mark.parametrize(
    ("kind", "key", "raw", "plural"),
    [
        ("PersistentVolume", "pv-1", local_pv("pv-1", "node-1"), "persistentvolumes"),
        ("PersistentVolumeClaim", "default/data", claim("data", "local"), "persistentvolumeclaims"),
    ],
)
def test_the_body_written_is_the_decision_s_revision_or_nothing(
    kind: str, key: str, raw: dict[str, object], plural: str
) -> None:
    ingest = Ingest(ClusterCache(), None, "volsched")
    ingest.upsert(kind, at_version(raw, 12, revision="12"))

    body = chosen_body(ingest, kind, key, 12)
    assert body["metadata"]["resourceVersion"] == "12"
    assert body["metadata"]["labels"] == {"revision": "12"}

    # The cache moved past the decision: the API server would answer 409, so nothing
    # is sent, and the user reads the API server's words.
    name = key.rpartition("/")[2]
    expected = (
        f'Operation cannot be fulfilled on {plural} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    with pytest.raises(Conflict, match=re.escape(expected)):
        chosen_body(ingest, kind, key, 11)

    with pytest.raises(BindingFailed, match="not found"):
        chosen_body(ingest, kind, "default/missing" if "/" in key else "missing", 12)
