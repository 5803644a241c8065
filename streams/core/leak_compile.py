"""Leak rules compiled for matching: each rule's RE2 program, and one pre-filter for them all.

A `RuleSet` holds the compiled rules in priority order and the combined pre-filter: every
rule's trigger in one RE2 pass (does anything match?) and one RE2 set pass (which rules to run?).
A string that no trigger matches costs that one pass, however many rules there are; only the
rules whose trigger occurs run on their own to find exact spans.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import re2

from schemas.re2_spans import spans_finder
from streams.core.leak_registry import BUILTIN_RULES
from streams.core.leak_rules import SECRET_KEY_BODY, LeakRule, Reject
from streams.errors import ConfigError

__all__ = [
    "BUILTIN_RULE_IDS",
    "JUDGED_PER_TEXT",
    "LITERAL_RULE",
    "CompiledRule",
    "Judged",
    "LeakRuleError",
    "RuleSet",
    "Search",
    "compile_ascii",
]

LITERAL_RULE: Final = "literal"
BUILTIN_RULE_IDS: Final = tuple(rule.id for rule in BUILTIN_RULES)

_RULE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MAX_RULE_ID = 64
_MAX_PATTERN_CHARS = 4096
# RE2's memory budget per compiled pattern; the combined pre-filter gets more room so its DFA
# rarely has to reset its state cache on long inputs.
_RULE_MEM = 8 << 20
_PREFILTER_MEM = 64 << 20

# A rejected secret of at most this many bytes is searched again for a match inside it (each
# byte is searched again at most this often, which keeps the scan linear).
_RESCAN: Final = 256
# Distinct values the context rules judge in one text (one `RuleSet.candidates` call); past
# it the rest are masked unjudged. Judging costs ~10 us a value: a megabyte of distinct
# credential-looking values (~40,000) would take seconds, the budget tens of milliseconds; a
# reply written by an assistant holds a few dozen (bench/README.md has the figures).
JUDGED_PER_TEXT: Final = 4096
# Spans of every group of the next match at or after a byte offset, or None.
Search = Callable[[bytes, int], Sequence[tuple[int, int]] | None]
# (start, end, priority, rule id) of a span to mask, in bytes of the searched data.
Candidate = tuple[int, int, int, str]


class LeakRuleError(ConfigError):
    """A deployment's leak rule is unusable; names the rule, never the pattern or the value."""

    def __init__(self, rule_id: str, reason: str) -> None:
        super().__init__(f"leak rule {rule_id!r}: {reason}")
        self.rule_id = rule_id
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CompiledRule:
    """A rule ready to search: its program, trigger, secret groups and placeholder filter."""

    id: str
    regex: Any  # re2._Regexp (the module has no type hints)
    trigger: str  # a group-free pattern every match contains
    secret_groups: tuple[int, ...]
    reject: Reject | None
    search: Search
    context: bool  # the value is a secret by its context: mask it wherever else it stands
    parts: Callable[[str], list[tuple[int, int]]] | None = None  # sub-spans of the secret

    def __repr__(self) -> str:
        return f"CompiledRule({self.id!r})"

    def spans(
        self, priority: int, data: bytes, judged: Judged | None = None
    ) -> Iterator[Candidate]:
        """This rule's spans to mask. The next search resumes where the secret ended, not where
        the match did, so context a match consumed after its secret (the `;` of `Pwd=a;`) can
        start the next match; after a rejected short secret, where that secret began. Each
        resumption is past the previous match's start: linear overall. `judged` holds the
        verdicts of this text's values (one per distinct value and context) and the budget."""
        pos, end = 0, len(data)
        judged = Judged() if judged is None else judged
        search = self.search
        while pos <= end:
            found = search(data, pos)
            if found is None:
                return
            ms, me = found[0]
            s, e = ms, me
            for g in self.secret_groups:
                gs, ge = found[g]
                if gs >= 0:
                    s, e = gs, ge
                    break
            pos = max(e, ms + 1)
            if s >= e:
                continue
            if self.reject is None:
                verdict: bool | None = False
            else:
                verdict = judged.reject(self, data, ms, s, e, me)
            if verdict is None:
                yield s, e, priority, self.id  # past the budget: masked whole, unjudged
                continue
            if verdict:
                # A rejected value may hold the next match (`KEY= DB_PASSWORD=...`: the next
                # key, not this one's value): search it again, when short, from its start.
                if e - s <= _RESCAN:
                    pos = max(s, ms + 1)
                continue
            if self.parts is not None and data[s:e].isascii():
                for ps, pe in self.parts(data[s:e].decode("ascii")):
                    yield s + ps, s + pe, priority, self.id
                continue
            yield s, e, priority, self.id


class Judged:
    """The verdicts of `reject` within one text: a value in the same context is judged once
    (a megabyte of one repeated assignment costs one judgement), and a context rule judges at
    most `JUDGED_PER_TEXT` distinct values; past that it fails closed (masking more is safe)."""

    __slots__ = ("left", "seen")

    def __init__(self, budget: int = JUDGED_PER_TEXT) -> None:
        self.seen: dict[tuple[str, bytes, bytes, bytes], bool] = {}
        self.left = budget

    def reject(
        self, rule: CompiledRule, data: bytes, ms: int, s: int, e: int, me: int
    ) -> bool | None:
        """`rule.reject` of the secret `data[s:e]` in its match; None when the budget is spent."""
        key = (rule.id, data[ms:s], data[s:e], data[e:me])
        verdict = self.seen.get(key)
        if verdict is not None:
            return verdict
        if rule.context:
            if self.left <= 0:
                return None
            self.left -= 1
        reject = rule.reject
        if reject is None:
            return False
        verdict = reject(_text(data, s, e), _text(data, ms, s), _text(data, e, me))
        self.seen[key] = verdict
        return verdict


def _text(data: bytes, s: int, e: int) -> str:
    return data[s:e].decode("utf-8", "replace")


def _options(max_mem: int, latin1: bool = False) -> Any:
    opts = re2.Options()
    opts.log_errors = False  # RE2 would log the pattern text, which may hold a secret
    opts.max_mem = max_mem
    if latin1:
        opts.encoding = re2.Options.Encoding.LATIN1
    return opts


def _compile(rule_id: str, pattern: str, max_mem: int = _RULE_MEM, ascii_only: bool = False) -> Any:
    """Compile for matching UTF-8 bytes. ASCII-only patterns run in Latin-1 mode: the same
    matches (their classes take all or none of the bytes >= 0x80), a program a fraction the
    size, so the DFA stays within its memory budget instead of falling back to the slow NFA."""
    try:
        if ascii_only:
            return re2.compile(pattern.encode("ascii"), _options(max_mem, latin1=True))
        return re2.compile(pattern, _options(max_mem))
    except re2.error as exc:
        # RE2 appends the offending fragment after ": "; keep only the reason.
        text = exc.args[0] if exc.args else b""
        reason = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
        raise LeakRuleError(
            rule_id, f"does not compile under RE2 ({reason.split(': ', 1)[0]})"
        ) from None


def compile_ascii(rule_id: str, pattern: str) -> Search:
    """An ASCII pattern as a byte search (for helpers of the core beside the rules)."""
    return spans_finder(_compile(rule_id, pattern, ascii_only=True))


def uncapture(pattern: str) -> str:
    """The same pattern with every group non-capturing, for a pre-filter that needs no spans.

    (RE2's `never_capture` option still captures named groups in this binding.) Escapes,
    character classes and `\\Q...\\E` are skipped so only real group openers are rewritten.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if pattern.startswith("\\Q", i):
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end + 2
                out.append(pattern[i:end])
                i = end
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            # `[]...]` and `[^]...]`: a leading `]` is a literal.
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):
                out.append("]")
                i += 1
            continue
        if c == "(":
            if pattern.startswith("(?P<", i) or pattern.startswith("(?<", i):
                close = pattern.find(">", i)
                out.append("(?:")
                i = close + 1 if close > 0 else n
                continue
            if not pattern.startswith("(?", i):
                out.append("(?:")
                i += 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _secret_groups(regex: Any) -> tuple[int, ...]:
    index: dict[str | bytes, int] = regex.groupindex
    names = {(k.decode() if isinstance(k, bytes) else k): v for k, v in index.items()}
    return tuple(names[name] for name in sorted(names) if name.startswith("secret"))


def _build_rule(rule_id: str, pattern: str, builtin: LeakRule | None = None) -> CompiledRule:
    # Built-in rules (they come with a trigger) are ASCII; a deployment's may not be.
    regex = _compile(rule_id, pattern, ascii_only=builtin is not None)
    trigger = uncapture(pattern) if builtin is None else builtin.trigger
    reject = None if builtin is None else builtin.reject
    context = builtin is not None and builtin.context
    parts = None if builtin is None else builtin.parts
    groups = _secret_groups(regex)
    return CompiledRule(
        rule_id, regex, trigger, groups, reject, spans_finder(regex), context, parts
    )


def _check_extra(rule_id: object, pattern: object, taken: set[str]) -> tuple[str, str]:
    if not isinstance(rule_id, str) or not isinstance(pattern, str):
        raise LeakRuleError(str(rule_id)[:_MAX_RULE_ID], "id and pattern must be strings")
    if len(rule_id) > _MAX_RULE_ID or not _RULE_ID.fullmatch(rule_id):
        shown = rule_id if len(rule_id) <= _MAX_RULE_ID else rule_id[:_MAX_RULE_ID] + "..."
        raise LeakRuleError(shown, "the id must be kebab-case ([a-z0-9] words joined by '-')")
    if rule_id in taken:
        raise LeakRuleError(rule_id, "the id is already used by a built-in rule or 'literal'")
    if not pattern:
        raise LeakRuleError(rule_id, "the pattern is empty")
    if len(pattern) > _MAX_PATTERN_CHARS:
        raise LeakRuleError(rule_id, f"the pattern is longer than {_MAX_PATTERN_CHARS} chars")
    return rule_id, pattern


def _literal_values(literals: Sequence[str]) -> list[str]:
    if isinstance(literals, (str, bytes)):
        raise TypeError("literals must be a sequence of strings, not one string")
    for n, lit in enumerate(literals):
        if not isinstance(lit, str) or not lit:
            raise LeakRuleError(LITERAL_RULE, f"literal #{n} is not a non-empty string")
    # Longest first: at one position the longest literal is the one masked.
    return sorted(set(literals), key=lambda v: (-len(v), v))


def compile_rules(
    literals: Sequence[str], patterns: Mapping[str, str], disabled: Collection[str] = ()
) -> list[CompiledRule]:
    """The deployment's literals and patterns, then the built-ins, in priority order: when two
    rules mask exactly the same span, what the deployment named first, then the specific
    built-ins, then the generic ones (listed last). `disabled` built-ins are left out (a
    policy's `leak_rules_disabled`); an id that names no built-in rule is refused."""
    unknown = sorted(str(rule_id) for rule_id in set(disabled) - set(BUILTIN_RULE_IDS))
    if unknown:
        raise LeakRuleError(unknown[0][:_MAX_RULE_ID], "names no built-in rule to switch off")
    rules: list[CompiledRule] = []
    values = _literal_values(literals)
    if values:
        rules.append(_build_rule(LITERAL_RULE, "|".join(re2.escape(v) for v in values)))
    taken = {*BUILTIN_RULE_IDS, LITERAL_RULE}
    for raw_id, raw_pattern in patterns.items():
        rule_id, pattern = _check_extra(raw_id, raw_pattern, taken)
        rule = _build_rule(rule_id, pattern)
        if rule.regex.fullmatch(b"") is not None:
            raise LeakRuleError(rule_id, "the pattern matches the empty string")
        taken.add(rule_id)
        rules.append(rule)
    rules.extend(_build_rule(r.id, r.pattern, r) for r in BUILTIN_RULES if r.id not in disabled)
    return rules


def _maybe(_data: bytes, _pos: int) -> Sequence[tuple[int, int]] | None:
    return ((0, 0),)


def edge_free(trigger: str) -> bool:
    """No `^`, `$`, `\\A` or `\\z` (conservatively: anywhere but a `[^` class opener), so the
    trigger matches inside a string exactly when it matches inside a newline-joined text
    holding that string."""
    bare = trigger.replace("\\\\", "").replace("\\$", "").replace("\\^", "").replace("[^", "[")
    return not any(token in bare for token in ("^", "$", "\\A", "\\z"))


class RuleSet:
    """Compiled rules in priority order with their combined pre-filter and rule selector."""

    __slots__ = ("joinable", "literal_count", "prefilter", "rules", "selector", "tree_filter")

    def __init__(
        self, literals: Sequence[str], patterns: Mapping[str, str], disabled: Collection[str] = ()
    ) -> None:
        self.rules: tuple[CompiledRule, ...] = tuple(compile_rules(literals, patterns, disabled))
        self.literal_count = len(_literal_values(literals))
        combined, self.selector = _build_prefilter(self.rules)
        # Without a combined pre-filter (too large to build), every string takes the full path.
        self.prefilter: Search = spans_finder(combined) if combined is not None else _maybe
        # Whether one pre-filter pass over many strings joined by newlines is as good as one
        # pass per string (the tree walk's fast path).
        self.joinable = combined is not None and all(edge_free(r.trigger) for r in self.rules)
        self.tree_filter = _tree_filter(self.rules, self.prefilter)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.rules)

    def candidates(self, data: bytes) -> Iterator[Candidate]:
        """Every rule's own matches as (start, end, priority, rule id) of the span to mask."""
        chosen = None
        if self.selector is not None:
            chosen = self.selector.Match(data)  # indexes of the rules whose trigger occurs
        # An empty answer after the pre-filter hit would mean the set failed: run every rule.
        priorities = sorted(chosen) if chosen else range(len(self.rules))
        judged = Judged()
        for priority in priorities:
            yield from self.rules[priority].spans(priority, data, judged)

    def hit(self, data: bytes) -> bool:
        """Does any rule's trigger occur in `data`?"""
        return self.prefilter(data, 0) is not None


def _build_prefilter(rules: Sequence[CompiledRule]) -> tuple[Any, Any]:
    """All triggers as one regex (does anything match?) and as a set (which rules to run?)."""
    try:
        prefilter = _compile(
            "prefilter", "|".join(f"(?:{r.trigger})" for r in rules), _PREFILTER_MEM
        )
        selector = re2.Set.SearchSet(_options(_PREFILTER_MEM))
        for r in rules:
            selector.Add(r.trigger)
        selector.Compile()
    except (LeakRuleError, re2.error):
        return None, None  # too large to combine: every rule runs on every string instead
    return prefilter, selector


# A secret-named key in a tree's plain JSON: every such key is found (maybe more: a value may
# read like one), so the walk judges the values. RE2: one linear pass.
secret_key_in_json: Final = compile_ascii("secret-key", f'(?i)"{SECRET_KEY_BODY}":')


def _tree_filter(rules: Sequence[CompiledRule], prefilter: Search) -> Search:
    """The pre-filter and the secret-named keys of a tree's plain JSON in one RE2 pass; two
    passes when the combined pattern is too large to build."""
    triggers = "|".join(f"(?:{r.trigger})" for r in rules)
    try:
        both = _compile("prefilter", f'{triggers}|(?i:"{SECRET_KEY_BODY}":)', _PREFILTER_MEM)
    except LeakRuleError:

        def twice(data: bytes, pos: int) -> Sequence[tuple[int, int]] | None:
            return secret_key_in_json(data, pos) or prefilter(data, pos)

        return twice
    return spans_finder(both)
