"""The HTML contract against the WHATWG html5lib-tests: is every input with a parse error refused?

Not part of `make bench` (it needs a checkout of github.com/html5lib/html5lib-tests at its last
revision with `tree-construction/`, which this repository does not carry): run
`python -m bench.html_conformance PATH`. Every tokenizer test that starts in the data state and
every tree-construction test (document, or fragment in a `body` context) is fenced as an
`assistant.html.v1` answer and validated; an input whose expected errors are not only about a
missing or odd doctype (a body fragment has none) must be refused. Prints the counts, the
refusing codes, and any input that was accepted; `RATIO html5lib_tests_refused` is the share
refused. Figures in bench/README.md.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from schemas.contract import ReplyInput
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.records import EMPTY_CONTEXT

_DOCTYPE_ONLY = re.compile(r"doctype", re.IGNORECASE)
_PARSE_CODES = frozenset({"html_parse_error", "unclosed_element"})
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")


def tokenizer_cases(root: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(file, input, expected error codes) of the tokenizer tests run from the data state."""
    for path in sorted((root / "tokenizer").glob("*.test")):
        for test in json.loads(path.read_text(encoding="utf-8")).get("tests", []):
            if "Data state" not in test.get("initialStates", ["Data state"]):
                continue
            if test.get("lastStartTag"):
                continue
            text = test["input"]
            if test.get("doubleEscaped"):
                text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
            yield path.name, text, [error["code"] for error in test.get("errors", [])]


def tree_cases(root: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(file, input, expected errors) of the tree-construction tests in a document or body."""
    for path in sorted((root / "tree-construction").glob("*.dat")):
        for block in ("\n" + path.read_text(encoding="utf-8")).split("\n#data\n")[1:]:
            sections: dict[str, list[str]] = {"data": []}
            current = "data"
            for line in block.split("\n"):
                head = line[1:].split(" ")[0] if line.startswith("#") else ""
                if head in {"errors", "new-errors", "document", "document-fragment"} or (
                    head in {"script-on", "script-off"}
                ):
                    current = head
                    sections[current] = []
                else:
                    sections.setdefault(current, []).append(line)
            context = " ".join(sections.get("document-fragment", [])).strip()
            if context not in ("", "body"):
                continue
            errors = [
                line
                for line in sections.get("errors", []) + sections.get("new-errors", [])
                if line.strip()
            ]
            yield path.name, "\n".join(sections["data"]), errors


def refused_by(html: str) -> list[str]:
    """The codes the contract refuses `html` with (empty: accepted)."""
    result = ASSISTANT_HTML_V1.validate(ReplyInput("text", f"```html\n{html}\n```"), EMPTY_CONTEXT)
    return [issue.code for issue in result.issues]


def run() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "html5lib-tests")
    total = refused = 0
    codes: Counter[str] = Counter()
    for kind, cases in (("tokenizer", tokenizer_cases(root)), ("tree", tree_cases(root))):
        with_errors = kind_refused = by_parse = 0
        for name, html, errors in cases:
            if not [error for error in errors if not _DOCTYPE_ONLY.search(error)]:
                continue
            if not html.strip():
                continue
            with_errors += 1
            found = refused_by(html)
            if found:
                kind_refused += 1
                codes.update(set(found))
                by_parse += bool(_PARSE_CODES & set(found))
            else:
                print(f"  ACCEPTED {kind} {name}: {html[:80]!r} (expected {errors[:3]})")
        print(
            f"{kind}: {with_errors} inputs with errors, {kind_refused} refused "
            f"({by_parse} by html_parse_error or unclosed_element)"
        )
        total += with_errors
        refused += kind_refused
    for code, count in codes.most_common():
        print(f"  {code}: {count}")
    print(f"RATIO html5lib_tests_refused {refused / max(total, 1):.4f}")


if __name__ == "__main__":
    run()
