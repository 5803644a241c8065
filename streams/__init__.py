"""replygate's pipeline stages, the Faust app and the CLI.

Importing this package stays light: Faust is only imported by `streams.worker` (and `streams.app`,
its entry point).
"""
