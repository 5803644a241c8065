"""`replygate completion SHELL`: the tab-completion script for bash or zsh, from the parser.

The script is written by shtab from the very parser `replygate` runs with, so it never lags a
new option; shtab is imported only here (no cost to any other command).
"""

from __future__ import annotations

import argparse
from typing import IO

from streams.cli.command import Command, help_text

SHELLS = ("bash", "zsh")
# Arguments that name a file or a folder: completed as paths.
_FILES = frozenset({"files", "config", "state", "command_config"})
_FOLDERS = frozenset({"workspaces", "media_root"})


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell the script is for")


def script(shell: str) -> str:
    """The completion script for `shell`, file and folder arguments completed as paths."""
    import shtab

    from streams.cli.main import _build_parser

    parser = _build_parser()
    for sub in parser.get_default("_subparsers").values():
        for action in sub._actions:
            if action.dest in _FILES:
                action.complete = shtab.FILE
            elif action.dest in _FOLDERS:
                action.complete = shtab.DIRECTORY
    text: str = shtab.complete(parser, shell=shell)
    return text


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    stdout.write(script(args.shell).encode())
    stdout.flush()
    return 0


COMMAND = Command(
    name="completion",
    summary="print the tab-completion script for bash or zsh",
    description=(
        "Print the tab-completion script for bash or zsh: commands, options, their choices,\n"
        "and paths where a file or folder is asked for."
    ),
    help=help_text(
        "  none. Load it once per shell, or save it where your shell looks:\n"
        '    bash: eval "$(replygate completion bash)"   (or save it in\n'
        "          ~/.local/share/bash-completion/completions/replygate)\n"
        "    zsh:  replygate completion zsh > ~/.zfunc/_replygate  (with ~/.zfunc in fpath,\n"
        "          before compinit)",
        "  0  the script was printed\n  2  an unknown shell",
        'eval "$(replygate completion bash)"',
    ),
    arguments=arguments,
    run=run,
)
