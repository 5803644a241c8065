"""Built-in leak rules switched off by id (a policy's `leak_rules_disabled`)."""

from __future__ import annotations

import pytest

from streams.core.leak_compile import BUILTIN_RULE_IDS, LeakRuleError
from streams.core.leaks import Masker

# A made-up token of GitHub's fine-grained shape (ghp_ and 36 characters), built here.
TOKEN = "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8"


def test_a_disabled_builtin_rule_masks_nothing_and_the_others_still_do() -> None:
    text = f"token {TOKEN}"
    masked, counts = Masker().mask_text(text)
    assert TOKEN not in masked and counts
    fired = next(iter(counts))
    assert fired in BUILTIN_RULE_IDS
    off = Masker(disabled=[fired])
    assert fired not in off.rule_ids
    assert len(off.rule_ids) == len(Masker().rule_ids) - 1
    _, left = off.mask_text(text)
    assert fired not in left


def test_an_unknown_rule_id_is_refused_by_name() -> None:
    with pytest.raises(LeakRuleError, match="'no-such-rule': names no built-in rule"):
        Masker(disabled=["no-such-rule"])
