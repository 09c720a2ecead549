"""``python -m noisyor_bench``: the same CLI as ``noisyor-bench``."""

import sys

from noisyor_bench.cli import main

sys.exit(main())
