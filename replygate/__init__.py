"""`python -m replygate`: the `replygate` command, for a venv whose console scripts are not on
PATH. The code lives in `schemas` and `streams`; this package only names the command."""
