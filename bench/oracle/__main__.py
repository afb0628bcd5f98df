"""``python -m bench.oracle`` is ``python -m bench.oracle.record``: recording is its only job."""

import sys

from bench.oracle.record import main

sys.exit(main())
