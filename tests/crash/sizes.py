"""How many kill points the crash suite hits: a couple of dozen in CI, a thousand when
VOLSCHED_CRASH_KILLS says so (``VOLSCHED_CRASH_KILLS=1000 VOLSCHED_CRASH_PARALLEL=4
pytest tests/crash/test_crash_suite.py -q -s``).

VOLSCHED_CRASH_PARALLEL rounds run at once (each with its own API server and daemons),
VOLSCHED_CRASH_SEED seeds the plan, and VOLSCHED_CRASH_REPORT names a JSON file the
figures are written to.
"""

from __future__ import annotations

import os

KILLS = int(os.environ.get("VOLSCHED_CRASH_KILLS", "20"))
PARALLEL = int(os.environ.get("VOLSCHED_CRASH_PARALLEL", "2"))
SEED = int(os.environ.get("VOLSCHED_CRASH_SEED", "1"))
REPORT = os.environ.get("VOLSCHED_CRASH_REPORT", "")
