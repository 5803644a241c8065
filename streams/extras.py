"""The install command for a missing extra, as it works for this copy of replygate.

No package index serves replygate, so `pip install 'replygate[worker]'` would look in the wrong
place: the command names the checkout this copy was installed from (pip records it, PEP 610),
or says to run it in a checkout.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlparse


def checkout() -> Path | None:
    """The replygate checkout this copy runs from (editable) or was installed from, while it
    is still there."""
    here = Path(__file__).resolve().parents[1]
    if (here / "pyproject.toml").is_file() and (here / "streams" / "cli").is_dir():
        return here
    try:
        recorded = distribution("replygate").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    try:
        url = urlparse(json.loads(recorded or "{}").get("url", ""))
    except (ValueError, AttributeError):
        return None
    if url.scheme != "file":
        return None
    folder = Path(unquote(url.path))
    return folder if (folder / "pyproject.toml").is_file() else None


def install_command(extra: str) -> str:
    """`pip install '/path/to/checkout[extra]'`, or the same from inside a checkout."""
    folder = checkout()
    if folder is None:
        return f"pip install '.[{extra}]' in a replygate checkout (no package index serves it)"
    return f"pip install '{folder}[{extra}]'"
