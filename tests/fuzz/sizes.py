"""How many inputs each fuzz test tries: a few hundred in CI, thousands when
VOLSCHED_FUZZ_EXAMPLES says so (``VOLSCHED_FUZZ_EXAMPLES=4000 pytest tests/fuzz``)."""

from __future__ import annotations

import os

EXAMPLES = int(os.environ.get("VOLSCHED_FUZZ_EXAMPLES", "150"))
