"""`python -m replygate ...` is `replygate ...`."""

import sys

from streams.cli.main import main

sys.exit(main())
