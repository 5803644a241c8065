"""`python -m streams.cli`: the `replygate` command without its console script."""

import sys

from streams.cli.main import main

sys.exit(main())
