"""One command line for every page generated from a registry (error codes, leak rules, ACLs).

`python -m MODULE` writes the page; `--check` exits 1, saying so, when the page is out of date.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def generated_doc_main(
    argv: Sequence[str] | None, page: Path, text: Callable[[], str], module: str
) -> int:
    """0 when written or up to date, 1 out of date (`--check`), 2 a usage error or no checkout
    to write into (the page lives in the checkout's docs/, not beside an installed copy)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--check"]):
        print(f"usage: python -m {module} [--check]", file=sys.stderr)
        return 2
    checkout = page.parent.parent
    if not (checkout / "pyproject.toml").is_file():  # an installed copy: no docs/ to write
        print(
            f"python -m {module} writes {page.parent.name}/{page.name} of a replygate checkout; "
            f"{checkout} is not one (an installed copy?): run it in the checkout",
            file=sys.stderr,
        )
        return 2
    fresh = text()
    if args == ["--check"]:
        current = page.read_text(encoding="utf-8") if page.exists() else ""
        if current != fresh:
            print(f"{page} is out of date: run `python -m {module}`", file=sys.stderr)
            return 1
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(fresh, encoding="utf-8")
    print(f"wrote {page}")
    return 0
