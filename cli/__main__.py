"""`python -m cli`: the `nmb` command."""

import sys

from cli import main

sys.exit(main())
