"""The `replygate` command: argument parsing and the entry points of each subcommand."""
