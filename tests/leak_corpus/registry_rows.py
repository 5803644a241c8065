"""Corpus rows from the rule registry: `python -m tests.leak_corpus.registry_rows`.

For every built-in rule not yet in secrets.jsonl, each of its registry examples (synthetic
values in the vendor's format) is set in an agent-style reply, and the span its rule masks is
the row's secret. Benign rows are real-world look-alikes per family (benign_families.jsonl,
written by hand). Deterministic: running it twice changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from streams.core.leak_registry import BUILTIN_RULES
from streams.core.leaks import Masker

HERE = Path(__file__).resolve().parent
TEMPLATES = (
    "Sure, I set it up. The credential I used is {x}; please rotate it once you're done.",
    "I found this in the CI logs:\n```\n{x}\n```\nYou should revoke it right away.",
    "Here is the snippet from your config:\n\n{x}\n\nLet me know if the deploy still fails.",
)


def secret_of(masker: Masker, rule_id: str, text: str) -> str | None:
    """The text under the rule's first marker when `text` is masked, or None."""
    out, counts = masker.mask_text(text)
    marker = f"[REDACTED:{rule_id}]"
    if rule_id not in counts or marker not in out:
        return None
    start = out.index(marker)
    end = len(text) - (len(out) - start - len(marker))
    return text[start:end]


def main() -> None:
    path = HERE / "secrets.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    have = {json.loads(line)["rule"] for line in lines if line.strip()}
    masker = Masker()
    added = []
    for n, rule in enumerate(BUILTIN_RULES):
        if rule.id in have:
            continue
        for k, example in enumerate(rule.examples):
            text = TEMPLATES[(n + k) % len(TEMPLATES)].format(x=example)
            secret = secret_of(masker, rule.id, text)
            if secret:
                added.append(json.dumps({"rule": rule.id, "text": text, "secret": secret}))
    if added:
        path.write_text("\n".join([*lines, *added]) + "\n", encoding="utf-8")
    print(f"added {len(added)} rows")


if __name__ == "__main__":
    main()
