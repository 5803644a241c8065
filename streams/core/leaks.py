"""Outbound leak masking: every string that leaves the gate is scanned and secrets are replaced.

A `Masker` is built once (built-in rules, the deployment's literal values and extra patterns)
and used on every outgoing record. Matching is RE2 only, so time is linear in the input: one
pass of a combined pattern tells whether a string holds anything at all (most do not); only
then does each rule run on its own to find exact spans. A match becomes
`[REDACTED:<rule-id>]`. Secrets never appear in results, exceptions, reprs or logs: a hit
names the rule, the JSON path and a count.

The rules also run on the decoded views of a string (`leak_views`: JSON escapes, character
references, percent-escapes, rendered markup, invisible characters removed), and a match there
masks the characters of the original that spell it, so what leaves holds no decodable secret.

A marker is opaque: no rule or literal masks inside a `[REDACTED:<rule-id>]` of this masker's
rules, whether a pass just wrote it or the text already held it (masked text masked again, as
for the preview, comes back unchanged), in the text or in any view of it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, AnyStr, Final

import orjson
import re2

from schemas.errors import child_path
from schemas.re2_spans import spans_finder
from streams.core.leak_rules import BUILTIN_RULES, Reject, is_placeholder
from streams.core.leak_views import View, decoded_text, decoded_views, may_hide
from streams.errors import ConfigError

if TYPE_CHECKING:
    from streams.settings import Settings

__all__ = ["BUILTIN_RULE_IDS", "LITERAL_RULE", "LeakRuleError", "MaskHit", "Masker"]

LITERAL_RULE: Final = "literal"
BUILTIN_RULE_IDS: Final = tuple(rule.id for rule in BUILTIN_RULES)

_RULE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MAX_RULE_ID = 64
_MAX_PATTERN_CHARS = 4096
# RE2's memory budget per compiled pattern; the combined pre-filter gets more room so its DFA
# rarely has to reset its state cache on long inputs.
_RULE_MEM = 8 << 20
_PREFILTER_MEM = 64 << 20
# Clean (secret-free) short strings seen before: dict keys and segment types repeat a lot.
_CLEAN_CACHE_MAX_LEN = 128
_CLEAN_CACHE_SIZE = 4096
# What the masker writes; the id is one of its rules' (checked against them, see `_markers`).
_MARKER_OPEN = "[REDACTED:"
_MARKER = re.compile(r"\[REDACTED:([a-z0-9]+(?:-[a-z0-9]+)*)\]")


class LeakRuleError(ConfigError):
    """A deployment's leak rule is unusable; names the rule, never the pattern or the value."""

    def __init__(self, rule_id: str, reason: str) -> None:
        super().__init__(f"leak rule {rule_id!r}: {reason}")
        self.rule_id = rule_id
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MaskHit:
    """Which rule fired where, and how often; never what it hid."""

    rule: str
    path: str
    count: int

    def as_dict(self) -> dict[str, str | int]:
        return {"rule": self.rule, "path": self.path, "count": self.count}


# Spans of every group of the next match at or after a byte offset, or None.
_Search = Callable[[bytes, int], Sequence[tuple[int, int]] | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    id: str
    regex: Any  # re2._Regexp (the module has no type hints)
    trigger: str  # a group-free pattern every match contains
    secret_groups: tuple[int, ...]
    reject: Reject | None
    search: _Search

    def __repr__(self) -> str:
        return f"_Rule({self.id!r})"


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


def _uncapture(pattern: str) -> str:
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


def _build_rule(
    rule_id: str, pattern: str, trigger: str | None = None, reject: Reject | None = None
) -> _Rule:
    # Built-in rules (they come with a trigger) are ASCII; a deployment's may not be.
    regex = _compile(rule_id, pattern, ascii_only=trigger is not None)
    trig = _uncapture(pattern) if trigger is None else trigger
    return _Rule(rule_id, regex, trig, _secret_groups(regex), reject, _raw_search(regex))


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


# Masking passes over one text: a pass only ever replaces spans with markers (or removes the
# rest beside one), so this bounds an input built to keep the loop going.
MASK_PASSES: Final = 4


class Masker:
    """Masks secrets in strings and JSON-like trees; built once, used on every outgoing record."""

    __slots__ = (
        "_clean",
        "_joinable",
        "_literal_count",
        "_marker_ids",
        "_prefilter",
        "_rules",
        "_selector",
        "_tree_filter",
    )

    def __init__(self, literals: Sequence[str] = (), patterns: Mapping[str, str] | None = None):
        if isinstance(literals, (str, bytes)):
            raise TypeError("literals must be a sequence of strings, not one string")
        rules: list[_Rule] = []
        # Order is priority when two rules mask exactly the same span: what the deployment
        # named first, then the specific built-ins, then the generic ones (listed last).
        for n, lit in enumerate(literals):
            if not isinstance(lit, str) or not lit:
                raise LeakRuleError(LITERAL_RULE, f"literal #{n} is not a non-empty string")
        # Longest first: at one position the longest literal is the one masked.
        values = sorted(set(literals), key=lambda v: (-len(v), v))
        if values:
            escaped = "|".join(re2.escape(v) for v in values)
            rules.append(_build_rule(LITERAL_RULE, escaped))
        taken = {*BUILTIN_RULE_IDS, LITERAL_RULE}
        for raw_id, raw_pattern in (patterns or {}).items():
            rule_id, pattern = _check_extra(raw_id, raw_pattern, taken)
            rule = _build_rule(rule_id, pattern)
            if rule.regex.fullmatch(b"") is not None:
                raise LeakRuleError(rule_id, "the pattern matches the empty string")
            taken.add(rule_id)
            rules.append(rule)
        rules.extend(_build_rule(r.id, r.pattern, r.trigger, r.reject) for r in BUILTIN_RULES)
        self._rules: tuple[_Rule, ...] = tuple(rules)
        self._literal_count = len(values)
        # The ids its markers may name (`literal` too: a reserved id, whether or not this
        # deployment lists literals).
        self._marker_ids = frozenset((LITERAL_RULE, *(r.id for r in self._rules)))
        prefilter, self._selector = _build_prefilter(self._rules)
        # Without a combined pre-filter (too large to build), every string takes the full path.
        self._prefilter: _Search = _raw_search(prefilter) if prefilter is not None else _maybe
        self._clean: set[str] = set()
        # Whether one pre-filter pass over many strings joined by newlines is as good as one
        # pass per string (see `_tree_is_clean`).
        self._joinable = prefilter is not None and all(_edge_free(r.trigger) for r in rules)
        self._tree_filter = _tree_filter(self._rules, self._prefilter)

    @classmethod
    def from_settings(cls, settings: Settings) -> Masker:
        """The deployment's literals (SecretStr) and extra patterns on top of the built-ins."""
        literals = [s.get_secret_value() for s in settings.leak_literals]
        return cls(literals=literals, patterns=dict(settings.leak_patterns))

    @property
    def rule_ids(self) -> tuple[str, ...]:
        """Every rule id this masker can report, in priority order (safe as metric labels)."""
        return tuple(r.id for r in self._rules)

    def __repr__(self) -> str:
        return f"Masker(rules={len(self._rules)}, literals={self._literal_count})"

    # --- strings ---------------------------------------------------------------------------

    def mask_text(self, text: str) -> tuple[str, dict[str, int]]:
        """Replace each secret in `text` with `[REDACTED:<rule-id>]`; counts per rule id.

        The rules run on the text and on each decoded view of it (`leak_views`): a secret
        written with entities, escapes or invisible characters is masked where it is written.
        What a mask leaves is masked again until nothing changes (a marker beside the escaped
        rest of a key's value is still that key's value), at most `MASK_PASSES` times.

        Markers are opaque (`_markers`): a match inside one, or reaching into one, is no match;
        a match around one and more removes the rest and keeps the marker. Counts are secrets:
        the rest beside a marker of an earlier pass is that marker's secret, counted once.
        """
        out, counts = self._mask_once(text, first=True)
        before, passes = text, 1
        while out is not before and passes < MASK_PASSES:  # a pass that changes nothing: done
            before = out
            out, more = self._mask_once(before, first=False)
            passes += 1
            for rule_id, n in more.items():
                counts[rule_id] = counts.get(rule_id, 0) + n
        return out, counts

    def _mask_once(self, text: str, first: bool) -> tuple[str, dict[str, int]]:
        """One pass; `text` itself when nothing changes. `first`: any marker in `text` was
        already there, so a rest masked beside one is a secret of its own (counted)."""
        if not text or text in self._clean:
            return text, {}
        data = text.encode("utf-8", "surrogatepass")
        hit = self._prefilter(data, 0) is not None
        views = self._views_with_hits(text)
        marks = self._markers(text) if hit or views else None
        if views or marks:
            return self._mask_with_views(text, data if hit else None, views, marks, first)
        regions = _resolve(self._candidates(data), data) if hit else []
        if not regions:
            self._remember_clean(text)
            return text, {}
        marked = ((s, e, rule_id, True) for s, e, rule_id in regions)
        pieces, counts = _splice(data, marked, lambda rule_id: f"[REDACTED:{rule_id}]".encode())
        return b"".join(pieces).decode("utf-8", "surrogatepass"), counts

    def _markers(self, text: str) -> _Marks | None:
        """Where the markers of this masker's rules stand in `text` (character offsets), or
        None. Asked only of a text a rule may match in: the common text costs nothing."""
        if _MARKER_OPEN not in text:
            return None
        ids = self._marker_ids
        spans = [m.span() for m in _MARKER.finditer(text) if m.group(1) in ids]
        if not spans:
            return None
        return [s for s, _e in spans], [e for _s, e in spans]

    def _views_with_hits(self, text: str) -> list[View]:
        """The decoded views of `text` in which the pre-filter finds something."""
        return [
            view
            for view in decoded_views(text)
            if self._prefilter(view.text.encode("utf-8", "surrogatepass"), 0) is not None
        ]

    def _mask_with_views(
        self,
        text: str,
        data: bytes | None,
        views: list[View],
        marks: _Marks | None = None,
        first: bool = True,
    ) -> tuple[str, dict[str, int]]:
        """Mask what the rules find in the text and in its views, in character positions.

        A match in a view masks the original span it came from; markup inside it stays (a PEM
        block split by `<br>` loses its text, not its tags): the first piece gets the marker,
        the others are removed. With markers in the text, a match is kept only when each of
        its pieces covers every marker it touches, and more (`_around_markers`).
        """
        pieces: list[_Piece] = []
        if data is not None:
            found = _char_spans(data, self._candidates(data))
            pieces += (
                (s, e, p, r, True)
                for s, e, p, r in found
                if marks is None or _around_markers(marks, s, e)
            )
        for view in views:
            view_data = view.exact().encode("utf-8", "surrogatepass")
            for s, e, p, r in _char_spans(view_data, self._candidates(view_data)):
                spans = view.to_original(s, e)
                if marks is not None and not all(_around_markers(marks, *sp) for sp in spans):
                    continue
                for n, (os_, oe) in enumerate(spans):
                    pieces.append((os_, oe, p, r, n == 0))
        regions = _fold(pieces)
        if not regions:
            self._remember_clean(text)
            return text, {}
        if marks is not None:
            out, counts = _splice_keeping(text, regions, marks, count_rest=first)
        else:
            out, counts = _splice(text, regions, lambda rule_id: f"[REDACTED:{rule_id}]")
        return "".join(out), counts

    def _remember_clean(self, text: str) -> None:
        if len(text) <= _CLEAN_CACHE_MAX_LEN:
            if len(self._clean) >= _CLEAN_CACHE_SIZE:
                self._clean.clear()
            self._clean.add(text)

    def _candidates(self, data: bytes) -> Iterator[tuple[int, int, int, str]]:
        """Every rule's own matches as (start, end, priority, rule id) of the span to mask."""
        chosen = None
        if self._selector is not None:
            chosen = self._selector.Match(data)  # indexes of the rules whose trigger occurs
        # An empty answer after the pre-filter hit would mean the set failed: run every rule.
        priorities = sorted(chosen) if chosen else range(len(self._rules))
        for priority in priorities:
            rule = self._rules[priority]
            yield from _rule_spans(rule, priority, data)

    # --- trees -----------------------------------------------------------------------------

    def mask_tree(self, value: Any, path: str = "$") -> tuple[Any, list[MaskHit]]:
        """Mask every string of a JSON-like value (dict keys too), without recursion.

        Unchanged containers are returned as they are (structural sharing). A dict value whose
        key names a secret (`{"password": "..."}`) is masked whole as `password-assignment`.
        Hits are ordered by path (indexes numerically) then rule.
        """
        if self._tree_is_clean(value):
            return value, []
        walker = _Walk(self, path)
        return walker.run(value), walker.hits()

    def _tree_is_clean(self, value: Any) -> bool:
        """True when the walk would change nothing: the common case, at a fraction of its cost.

        The walk costs a Python frame per string. Most trees have no string with a decoded
        view: their JSON is pre-filtered whole (`_plain_json`). Otherwise the strings without
        views (no escapes, markup or invisible characters) are joined by newlines and pre-filtered
        in one pass.
        No trigger is anchored to a text edge (`_joinable`) and a newline reads like one to
        `\\b`, so a match inside any one string is a match in the join. The other strings go
        through `mask_text` one by one; secret-named keys are judged as the walk judges them.
        """
        if not self._joinable or not isinstance(value, (dict, list, tuple)):
            return False
        dump = _plain_json(value)
        if dump is not None:
            return self._tree_filter(dump, 0) is None
        texts = _tree_texts(value)
        if texts is None:
            return False
        strings, keyed = texts
        plain: list[str] = []
        others: list[str] = []
        for text in strings:
            (others if may_hide(text) else plain).append(text)
        if plain:
            joined = "\n".join(plain).encode("utf-8", "surrogatepass")
            if self._prefilter(joined, 0) is not None:
                return False
        if any(self.mask_text(text)[1] for text in others):
            return False
        return not any(_secret_keyed(k, v) for k, v in keyed)

    def _mask_value(self, key: str | None, value: str) -> tuple[str, dict[str, int]]:
        new, counts = self.mask_text(value)
        if counts or key is None or not _secret_keyed(key, value):
            return new, counts
        return "[REDACTED:password-assignment]", {"password-assignment": 1}


def _secret_keyed(key: str, value: str) -> bool:
    """A value masked whole for its key's name (`{"password": "..."}`), placeholders aside."""
    return _is_secret_key(decoded_text(key)) and not _reject_keyed_value(value)


def _edge_free(trigger: str) -> bool:
    """No `^`, `$`, `\\A` or `\\z` (conservatively: anywhere but a `[^` class opener), so the
    trigger matches inside a string exactly when it matches inside a newline-joined text
    holding that string."""
    bare = trigger.replace("[^", "[")
    return not any(token in bare for token in ("^", "$", "\\A", "\\z"))


# The JSON escapes of a string without a backslash of its own, and what they stand for.
_UNESCAPES: Final = ((b"\\n", b"\n"), (b"\\t", b"\t"), (b"\\r", b"\r"), (b'\\"', b'"'))


def _plain_json(value: Any) -> bytes | None:
    """The tree as JSON (one C-level pass instead of a Python step per string) with its strings
    unescaped, when none of them has a decoded view; else None.

    ASCII without a backslash, `&`, `%` or `<` is stricter than what `may_hide` asks of each
    string. Every string then stands in the text as it is, between quotes, which read like the
    join's newlines to `\\b`: a trigger matching in one string matches in the text.
    """
    try:
        dump = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError too: non-str keys, surrogates, cycles, depth
        return None
    if not dump.isascii() or b"&" in dump or b"%" in dump or b"<" in dump:
        return None  # unescaping cannot make or remove these: first, before the copies
    if b"\\" in dump:
        if b"\\\\" in dump:
            return None
        for escape, char in _UNESCAPES:
            dump = dump.replace(escape, char)
        if b"\\" in dump:
            return None
    return dump


def _tree_texts(value: Any) -> tuple[list[str], list[tuple[str, str]]] | None:
    """Every string of a JSON-like tree (dict keys too) and every (str key, str value) pair;
    None when a container occurs twice (shared or cyclic: the full walk deals with those)."""
    strings: list[str] = []
    keyed: list[tuple[str, str]] = []
    seen = {id(value)}
    stack = [value]
    while stack:
        node = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
            for key, child in node.items():
                if isinstance(key, str):
                    strings.append(key)
                    if isinstance(child, str):
                        keyed.append((key, child))
        else:
            children = node
        for child in children:
            if isinstance(child, str):
                strings.append(child)
            elif isinstance(child, (dict, list, tuple)):
                if id(child) in seen:
                    return None
                seen.add(id(child))
                stack.append(child)
    return strings, keyed


def _build_prefilter(rules: Sequence[_Rule]) -> tuple[Any, Any]:
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


def _tree_filter(rules: Sequence[_Rule], prefilter: _Search) -> _Search:
    """The pre-filter and the secret-named keys of a tree's plain JSON (`_plain_json`) in one
    RE2 pass; two passes when the combined pattern is too large to build."""
    triggers = "|".join(f"(?:{r.trigger})" for r in rules)
    try:
        both = _compile("prefilter", f'{triggers}|(?i:"{_SECRET_KEY_BODY}":)', _PREFILTER_MEM)
    except LeakRuleError:

        def twice(data: bytes, pos: int) -> Sequence[tuple[int, int]] | None:
            return _secret_key_in_json(data, pos) or prefilter(data, pos)

        return twice
    return _raw_search(both)


def _maybe(_data: bytes, _pos: int) -> Sequence[tuple[int, int]] | None:
    return ((0, 0),)


def _raw_search(regex: Any) -> _Search:
    """Spans of every group of the next match at or after a byte offset, or None (straight
    from the RE2 object: a third of the cost per match, which matters on inputs packed with
    matches)."""
    return spans_finder(regex)


def _rule_spans(rule: _Rule, priority: int, data: bytes) -> Iterator[tuple[int, int, int, str]]:
    """One rule's spans to mask. The next search resumes where the secret ended, not where the
    match did, so context a match consumed after its secret (the `;` of `Pwd=a;`) can start
    the next match. Each resumption is past the previous secret, so the scan stays linear."""
    pos, end = 0, len(data)
    search = rule.search
    while pos <= end:
        spans = search(data, pos)
        if spans is None:
            return
        ms, me = spans[0]
        s, e = ms, me
        for g in rule.secret_groups:
            gs, ge = spans[g]
            if gs >= 0:
                s, e = gs, ge
                break
        pos = max(e, ms + 1)
        if s >= e:
            continue
        if rule.reject is not None and rule.reject(
            _text(data, s, e), _text(data, ms, s), _text(data, e, me)
        ):
            continue
        yield s, e, priority, rule.id


def _text(data: bytes, s: int, e: int) -> str:
    return data[s:e].decode("utf-8", "replace")


def _char_bounds(data: bytes, s: int, e: int) -> tuple[int, int]:
    """Widen a byte span to whole UTF-8 characters (a bounded run may stop inside one)."""
    while s > 0 and 0x80 <= data[s] < 0xC0:
        s -= 1
    while e < len(data) and 0x80 <= data[e] < 0xC0:
        e += 1
    return s, e


def _resolve(cands: Iterator[tuple[int, int, int, str]], data: bytes) -> list[tuple[int, int, str]]:
    """Earliest start wins, then the longest, then rule priority; overlaps fold into the winner.

    Folding (rather than dropping) an overlapping match keeps its tail from leaking.
    """
    regions: list[tuple[int, int, str]] = []
    widened = ((*_char_bounds(data, s, e), p, r) for s, e, p, r in cands)
    for s, neg_e, _prio, rule_id in sorted((s, -e, p, r) for s, e, p, r in widened):
        e = -neg_e
        if regions and s < regions[-1][1]:
            last = regions[-1]
            if e > last[1]:
                regions[-1] = (last[0], e, last[2])
            continue
        regions.append((s, e, rule_id))
    return regions


def _splice(
    source: AnyStr,
    regions: Iterable[tuple[int, int, str, bool]],
    marker: Callable[[str], AnyStr],
) -> tuple[list[AnyStr], dict[str, int]]:
    """`source` cut around the regions (sorted, disjoint), each replaced by its rule's marker or
    by nothing; and how many markers per rule were written."""
    pieces: list[AnyStr] = []
    counts: dict[str, int] = {}
    prev = 0
    for s, e, rule_id, marked in regions:
        pieces.append(source[prev:s])
        if marked:
            pieces.append(marker(rule_id))
            counts[rule_id] = counts.get(rule_id, 0) + 1
        prev = e
    pieces.append(source[prev:])
    return pieces, dict(sorted(counts.items()))


# (start, end, priority, rule id, carries the marker) in characters of the original text.
_Piece = tuple[int, int, int, str, bool]
# The markers of a text: their starts and their ends (sorted, disjoint), in characters.
_Marks = tuple[list[int], list[int]]


def _around_markers(marks: _Marks, s: int, e: int) -> bool:
    """May [s, e) be masked in a text with markers: it touches none, or it covers whole each
    one it touches and is more than one marker alone? A span inside a marker, or reaching into
    one, was made by the marker's own text (`acme-[a-z]+` in `[REDACTED:acme-key]`)."""
    starts, ends = marks
    i = bisect_right(ends, s)  # the first marker ending after s
    if i == len(starts) or starts[i] >= e:
        return True
    if starts[i] < s:
        return False
    j = bisect_left(starts, e) - 1  # the last marker starting before e
    return ends[j] <= e and (i, s, e) != (j, starts[i], ends[j])


def _splice_keeping(
    text: str, regions: Iterable[tuple[int, int, str, bool]], marks: _Marks, count_rest: bool
) -> tuple[list[str], dict[str, int]]:
    """`_splice` for a text with markers: a region holding markers (whole, `_around_markers`)
    keeps them as they are and loses the rest; one counts only when `count_rest` (a marker of
    an earlier pass already counted its secret)."""
    starts, ends = marks
    pieces: list[str] = []
    counts: dict[str, int] = {}
    prev = 0
    for s, e, rule_id, marked in regions:
        pieces.append(text[prev:s])
        kept = range(bisect_left(starts, s), bisect_left(starts, e))
        if kept:
            pieces += (text[starts[k] : ends[k]] for k in kept)
        elif marked:
            pieces.append(f"[REDACTED:{rule_id}]")
        if marked and (count_rest or not kept):
            counts[rule_id] = counts.get(rule_id, 0) + 1
        prev = e
    pieces.append(text[prev:])
    return pieces, dict(sorted(counts.items()))


def _char_spans(
    data: bytes, cands: Iterator[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Candidates with byte offsets into `data` as character offsets, in one pass."""
    spans = [(*_char_bounds(data, s, e), p, r) for s, e, p, r in cands]
    if not spans or data.isascii():
        return spans
    offsets = sorted({o for s, e, _p, _r in spans for o in (s, e)})
    chars: dict[int, int] = {}
    prev = count = 0
    for offset in offsets:
        count += len(data[prev:offset].decode("utf-8", "surrogatepass"))
        chars[offset] = count
        prev = offset
    return [(chars[s], chars[e], p, r) for s, e, p, r in spans]


def _fold(pieces: list[_Piece]) -> list[tuple[int, int, str, bool]]:
    """`_resolve` for pieces: overlaps fold into the earliest; a region carries a marker when
    any piece in it does, named after the first such piece."""
    regions: list[tuple[int, int, str, bool]] = []
    ordered = sorted((s, -e, p, not m, r) for s, e, p, r, m in pieces)
    for s, neg_e, _prio, unmarked, rule_id in ordered:
        e, marked = -neg_e, not unmarked
        if regions and s < regions[-1][1]:
            ls, le, lr, lm = regions[-1]
            if marked and not lm:
                lr, lm = rule_id, True
            regions[-1] = (ls, max(le, e), lr, lm)
            continue
        regions.append((s, e, rule_id, marked))
    return regions


# A dict key that names a secret: {"password": ...}, {"OPENAI_API_KEY": ...}, {"clientSecret": ...}.
_SECRET_KEY_BODY: Final = (
    r"[A-Za-z0-9_.-]{0,60}(?:passwd|password|passphrase|[_.-]pass|pwd|secret|token"
    r"|credentials?|(?:api|secret|access|private|auth|client|encryption|signing|master|app"
    r"|session)[_-]?(?:key|token|secret)|apikey)"
)
_SECRET_KEY = re.compile(f"(?i){_SECRET_KEY_BODY}")
# Such a key in a tree's plain JSON (`_plain_json`): every secret-named key is found (maybe
# more: a value may read like one), so the walk judges the values. RE2: one linear pass, where
# `re` backtracks through the alternation at every quote.
_secret_key_in_json = spans_finder(
    _compile("secret-key", f'(?i)"{_SECRET_KEY_BODY}":', ascii_only=True)
)
_secret_key_cache: dict[str, bool] = {}


def _is_secret_key(key: str) -> bool:
    known = _secret_key_cache.get(key)
    if known is None:
        known = len(key) <= 80 and _SECRET_KEY.fullmatch(key) is not None
        if len(_secret_key_cache) >= _CLEAN_CACHE_SIZE:
            _secret_key_cache.clear()
        _secret_key_cache[key] = known
    return known


def _reject_keyed_value(value: str) -> bool:
    """The same judgement as for a quoted literal after `key =`: placeholders stay."""
    return len(value) < 3 or is_placeholder(value) or any(c.isspace() for c in value.strip())


def _sort_key(parts: tuple[str | int, ...]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in parts)


def _part(key: Any) -> str | int:
    """A path part: list indexes and str keys as they are, any other dict key as text."""
    return key if isinstance(key, str) or type(key) is int else str(key)


class _Frame:
    """One container being walked: its items, and a copy made only once something changes."""

    __slots__ = ("i", "is_dict", "items", "key", "out", "parent", "renamed", "src", "taken")

    def __init__(self, src: Any, parent: _Frame | None, key: Any, renamed: bool = False) -> None:
        self.src = src
        self.parent = parent
        self.key = key
        self.renamed = renamed  # its key in the parent dict was masked
        self.is_dict = isinstance(src, dict)
        self.items: Iterator[Any] = iter(src.items()) if self.is_dict else iter(src)
        self.i = 0
        self.out: list[Any] | None = None
        # Keys in use and the next number per masked key, once a key of this dict is masked.
        self.taken: tuple[set[Any], dict[str, int]] | None = None

    def put(self, key: Any, value: Any, changed: bool) -> None:
        """Record item `self.i - 1` (maybe with a new key/value); copy the container on change."""
        if self.out is None:
            if not changed:
                return
            n = self.i - 1
            self.out = list(islice(self.src.items(), n)) if self.is_dict else list(self.src[:n])
        self.out.append((key, value) if self.is_dict else value)

    def result(self) -> Any:
        if self.out is None:
            return self.src
        if self.is_dict:
            return dict(self.out)
        return tuple(self.out) if isinstance(self.src, tuple) else self.out

    def parts(self) -> tuple[str | int, ...]:
        rev: list[str | int] = []
        frame: _Frame | None = self
        while frame is not None and frame.parent is not None:
            rev.append(_part(frame.key))
            frame = frame.parent
        return tuple(reversed(rev))


class _Walk:
    """The iterative walk behind `Masker.mask_tree`."""

    __slots__ = ("base", "counts", "masker")

    def __init__(self, masker: Masker, base: str) -> None:
        self.masker = masker
        self.base = base
        self.counts: dict[tuple[tuple[str | int, ...], str], int] = {}

    def note(self, parts: tuple[str | int, ...], counts: Mapping[str, int]) -> None:
        for rule_id, n in counts.items():
            k = (parts, rule_id)
            self.counts[k] = self.counts.get(k, 0) + n

    def hits(self) -> list[MaskHit]:
        ordered = sorted(self.counts.items(), key=lambda kv: (_sort_key(kv[0][0]), kv[0][1]))
        return [MaskHit(rule, child_path(self.base, *parts), n) for (parts, rule), n in ordered]

    def run(self, value: Any) -> Any:
        masker = self.masker
        if isinstance(value, str):
            new, counts = masker.mask_text(value)
            self.note((), counts)
            return new
        if not isinstance(value, (dict, list, tuple)):
            return value
        root = _Frame(value, None, None)
        stack = [root]
        open_ids = {id(value)}
        result: Any = value
        while stack:
            frame = stack[-1]
            item: Any = next(frame.items, _END)
            if item is _END:
                stack.pop()
                open_ids.discard(id(frame.src))
                new = frame.result()
                if frame.parent is None:
                    result = new
                else:
                    frame.parent.put(frame.key, new, new is not frame.src or frame.renamed)
                continue
            frame.i += 1
            if frame.is_dict:
                key, child = item
                new_key = self._mask_key(frame, key)
            else:
                key = new_key = frame.i - 1
                child = item
            if isinstance(child, str):
                text_key = key if isinstance(key, str) else None
                new_child, counts = masker._mask_value(text_key, child)
                if counts:
                    self.note((*frame.parts(), _part(new_key)), counts)
                frame.put(new_key, new_child, new_child is not child or new_key is not key)
            elif isinstance(child, (dict, list, tuple)):
                if id(child) in open_ids:
                    where = child_path(self.base, *frame.parts(), _part(new_key))
                    raise ValueError(f"cyclic structure at {where}")
                open_ids.add(id(child))
                stack.append(_Frame(child, frame, new_key, new_key is not key))
            else:
                frame.put(new_key, child, new_key is not key)
        return result

    def _mask_key(self, frame: _Frame, key: Any) -> Any:
        if not isinstance(key, str):
            return key
        new_key, counts = self.masker.mask_text(key)
        if not counts:
            return key
        # Two keys may mask to the same text; keep both, the later one numbered.
        if frame.taken is None:
            frame.taken = (set(frame.src), {})
        used, numbers = frame.taken
        candidate, n = new_key, numbers.get(new_key, 1)
        if n > 1:
            candidate = f"{new_key}#{n}"
        while candidate in used:
            n += 1
            candidate = f"{new_key}#{n}"
        numbers[new_key] = n
        used.add(candidate)
        self.note((*frame.parts(), candidate), counts)
        return candidate


_END: Final = object()
