"""Outbound leak masking: every string that leaves the gate is scanned and secrets are replaced.

A `Masker` is built once (built-in rules, the deployment's literal values and extra patterns)
and used on every outgoing record. Matching is RE2 only, so time is linear in the input: one
pass of a combined pre-filter tells whether a string holds anything at all (most do not); only
then do the rules whose trigger occurs run on their own to find exact spans (`leak_compile`).
A match becomes `[REDACTED:<rule-id>]` (`leak_spans.marker`). Secrets never appear in results,
exceptions, reprs or logs: a hit names the rule, the JSON path and a count.

The rules also run on the decoded views of a string (`leak_views`: JSON escapes, character
references, percent-escapes, rendered markup, invisible characters removed), and a match there
masks the characters of the original that spell it, so what leaves holds no decodable secret.

Once known, masked everywhere: a value that a context rule identifies (an assignment, a header,
a connection string, a secret-named dict key) is masked wherever else it stands in the same
text, or in the same tree for `mask_tree`, in every decoded view too.

A marker is opaque: no rule or literal masks inside a `[REDACTED:<rule-id>]` of this masker's
rules, whether a pass just wrote it or the text already held it (masked text masked again, as
for the preview, comes back unchanged), in the text or in any view of it.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from streams.core.leak_compile import LITERAL_RULE, RuleSet
from streams.core.leak_rules import is_placeholder
from streams.core.leak_spans import (
    MARKER,
    MARKER_OPEN,
    Marks,
    Piece,
    around_markers,
    char_spans,
    fold,
    marker,
    marker_bytes,
    resolve,
    splice,
    splice_keeping,
)
from streams.core.leak_views import View, decoded_views
from streams.core.leak_walk import SecretKeys, TreeWalk, tree_is_clean
from streams.core.mask_hit import MaskHit

if TYPE_CHECKING:
    from streams.settings.model import ContractSettings

__all__ = ["Masker"]

# Clean (secret-free) short strings seen before: dict keys and segment types repeat a lot.
_CLEAN_CACHE_MAX_LEN = 128
_CLEAN_CACHE_SIZE = 4096
# Masking passes over one text: a pass only ever replaces spans with markers (or removes the
# rest beside one), so this bounds an input built to keep the loop going.
MASK_PASSES: Final = 4
# A value found by its context is masked elsewhere only when it is at least this long (a
# shorter one would mask common words) and stands as a whole token there.
MIN_REPEAT: Final = 4
# At most this many values per record are looked for again (bounds a hostile record).
MAX_KNOWN: Final = 64
KEYED_RULE: Final = "password-assignment"

_NAMES_SECRET = re.compile(r"(?i)passw|passwd|secret|token|api[_-]?key|apikey|credential")
# Values found by context in a text or tree: value -> the rule that found it.
Known = dict[str, str]


def _add(counts: dict[str, int], more: Mapping[str, int]) -> None:
    for rule_id, n in more.items():
        counts[rule_id] = counts.get(rule_id, 0) + n


def _learn(known: Known, value: str, rule_id: str) -> None:
    """Remember a value found by context, unless too short, a placeholder, or too many."""
    value = value.strip()
    if (
        len(value) >= MIN_REPEAT
        # `api_key='api_key='...`: a value that names a secret is a key, not one to look for.
        and _NAMES_SECRET.search(value) is None
        and len(known) < MAX_KNOWN
        and value not in known
        and MARKER_OPEN not in value
        and not is_placeholder(value)
    ):
        known[value] = rule_id


def _edge(c: str) -> bool:
    return c.isalnum() or c == "_"


def _occurrences(text: str, value: str) -> Iterator[int]:
    """Starts of `value` in `text` as a whole token: a word character at the value's edge must
    not continue into one in the text (`hunter2` is not masked inside `hunter22`)."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        left_ok = start == 0 or not (_edge(value[0]) and _edge(text[start - 1]))
        right_ok = end == len(text) or not (_edge(value[-1]) and _edge(text[end]))
        if left_ok and right_ok:
            yield start
        start = text.find(value, start + 1)


def _touches_no_marker(marks: Marks | None, s: int, e: int) -> bool:
    if marks is None:
        return True
    starts, ends = marks
    i = bisect_left(ends, s + 1)  # the first marker ending after s
    return i == len(starts) or starts[i] >= e


class Masker:
    """Masks secrets in strings and JSON-like trees; built once, used on every outgoing record."""

    __slots__ = ("_clean", "_context_ids", "_keys", "_marker_ids", "_rules")

    def __init__(
        self,
        literals: Sequence[str] = (),
        patterns: Mapping[str, str] | None = None,
        disabled: Collection[str] = (),
    ):
        self._rules = RuleSet(literals, patterns or {}, disabled)
        # The ids its markers may name (`literal` too: a reserved id, whether or not this
        # deployment lists literals).
        self._marker_ids = frozenset((LITERAL_RULE, *self._rules.ids))
        self._context_ids = frozenset(r.id for r in self._rules.rules if r.context)
        self._clean: set[str] = set()
        self._keys = SecretKeys()

    @classmethod
    def from_settings(cls, settings: ContractSettings) -> Masker:
        """The deployment's literals (SecretStr) and extra patterns on top of the built-ins."""
        literals = [s.get_secret_value() for s in settings.leak_literals]
        return cls(literals=literals, patterns=dict(settings.leak_patterns))

    @property
    def rule_ids(self) -> tuple[str, ...]:
        """Every rule id this masker can report, in priority order (safe as metric labels)."""
        return self._rules.ids

    def __repr__(self) -> str:
        return f"Masker(rules={len(self._rules.rules)}, literals={self._rules.literal_count})"

    # --- strings ---------------------------------------------------------------------------

    def mask_text(self, text: str) -> tuple[str, dict[str, int]]:
        """Replace each secret in `text` with `[REDACTED:<rule-id>]`; counts per rule id.

        The rules run on the text and on each decoded view of it (`leak_views`): a secret
        written with entities, escapes or invisible characters is masked where it is written.
        What a mask leaves is masked again until nothing changes (a marker beside the escaped
        rest of a key's value is still that key's value), at most `MASK_PASSES` times. Then a
        value found by its context is masked wherever else it stands in the text.

        Markers are opaque: a match inside one, or reaching into one, is no match; a match
        around one and more removes the rest and keeps the marker. Counts are secrets: the rest
        beside a marker of an earlier pass is that marker's secret, counted once.
        """
        known: Known = {}
        out, counts = self._scan(text, known)
        if known:
            out, more = self.mask_known(out, known)
            _add(counts, more)
        return out, counts

    def _scan(self, text: str, known: Known) -> tuple[str, dict[str, int]]:
        """`mask_text` without the repeats; the values found by context go into `known`."""
        out, counts = self._mask_once(text, True, known)
        before, passes = text, 1
        while out is not before and passes < MASK_PASSES:  # a pass that changes nothing: done
            before = out
            out, more = self._mask_once(before, False, known)
            passes += 1
            _add(counts, more)
        return out, counts

    def _mask_once(self, text: str, first: bool, known: Known) -> tuple[str, dict[str, int]]:
        """One pass; `text` itself when nothing changes. `first`: any marker in `text` was
        already there, so a rest masked beside one is a secret of its own (counted)."""
        if not text or text in self._clean:
            return text, {}
        data = text.encode("utf-8", "surrogatepass")
        hit = self._rules.hit(data)
        views = self._views_with_hits(text)
        marks = self._markers(text) if hit or views else None
        if views or marks:
            return self._mask_with_views(text, data if hit else None, views, marks, first, known)
        regions = resolve(self._rules.candidates(data), data) if hit else []
        if not regions:
            self._remember_clean(text)
            return text, {}
        for s, e, rule_id in regions:
            if rule_id in self._context_ids:
                _learn(known, data[s:e].decode("utf-8", "replace"), rule_id)
        marked = ((s, e, rule_id, True) for s, e, rule_id in regions)
        pieces, counts = splice(data, marked, marker_bytes)
        return b"".join(pieces).decode("utf-8", "surrogatepass"), counts

    def _markers(self, text: str) -> Marks | None:
        """Where the markers of this masker's rules stand in `text` (character offsets), or
        None. Asked only of a text a rule may match in: the common text costs nothing."""
        if MARKER_OPEN not in text:
            return None
        ids = self._marker_ids
        spans = [m.span() for m in MARKER.finditer(text) if m.group(1) in ids]
        if not spans:
            return None
        return [s for s, _e in spans], [e for _s, e in spans]

    def _views_with_hits(self, text: str) -> list[View]:
        """The decoded views of `text` in which the pre-filter finds something."""
        return [
            view
            for view in decoded_views(text)
            if self._rules.hit(view.text.encode("utf-8", "surrogatepass"))
        ]

    def _mask_with_views(
        self,
        text: str,
        data: bytes | None,
        views: list[View],
        marks: Marks | None,
        first: bool,
        known: Known,
    ) -> tuple[str, dict[str, int]]:
        """Mask what the rules find in the text and in its views, in character positions.

        A match in a view masks the original span it came from; markup inside it stays (a PEM
        block split by `<br>` loses its text, not its tags): the first piece gets the marker,
        the others are removed. With markers in the text, a match is kept only when each of
        its pieces covers every marker it touches, and more (`around_markers`).
        """
        pieces: list[Piece] = []
        context = self._context_ids
        if data is not None:
            for s, e, p, r in char_spans(data, self._rules.candidates(data)):
                if marks is None or around_markers(marks, s, e):
                    pieces.append((s, e, p, r, True))
                    if r in context:
                        _learn(known, text[s:e], r)
        for view in views:
            view_text = view.exact()
            view_data = view_text.encode("utf-8", "surrogatepass")
            for s, e, p, r in char_spans(view_data, self._rules.candidates(view_data)):
                spans = view.to_original(s, e)
                if marks is not None and not all(around_markers(marks, *sp) for sp in spans):
                    continue
                if r in context:
                    _learn(known, view_text[s:e], r)
                for n, (os_, oe) in enumerate(spans):
                    pieces.append((os_, oe, p, r, n == 0))
        return self._splice_pieces(text, pieces, marks, first)

    def _splice_pieces(
        self, text: str, pieces: list[Piece], marks: Marks | None, count_rest: bool
    ) -> tuple[str, dict[str, int]]:
        regions = fold(pieces)
        if not regions:
            self._remember_clean(text)
            return text, {}
        if marks is not None:
            out, counts = splice_keeping(text, regions, marks, count_rest=count_rest)
        else:
            out, counts = splice(text, regions, marker)
        return "".join(out), counts

    def mask_known(self, text: str, known: Mapping[str, str]) -> tuple[str, dict[str, int]]:
        """Mask each known value (value -> rule id) wherever it stands in `text` as a whole
        token, in the text and in its decoded views; markers stay as they are."""
        if not text or not known:
            return text, {}
        pieces: list[Piece] = []
        for value, rule_id in known.items():
            pieces += ((s, s + len(value), 0, rule_id, True) for s in _occurrences(text, value))
        for view in decoded_views(text):
            if not any(value in view.text for value in known):
                continue
            view_text = view.exact()
            for value, rule_id in known.items():
                for s in _occurrences(view_text, value):
                    spans = view.to_original(s, s + len(value))
                    pieces += ((a, b, 0, rule_id, n == 0) for n, (a, b) in enumerate(spans))
        if not pieces:
            return text, {}
        marks = self._markers(text)
        kept = [p for p in pieces if _touches_no_marker(marks, p[0], p[1])]
        if not kept:
            return text, {}
        return self._splice_pieces(text, kept, None, True)

    def _remember_clean(self, text: str) -> None:
        if len(text) <= _CLEAN_CACHE_MAX_LEN:
            if len(self._clean) >= _CLEAN_CACHE_SIZE:
                self._clean.clear()
            self._clean.add(text)

    # --- trees -----------------------------------------------------------------------------

    def mask_value(
        self, key: str | None, value: str, known: Known | None = None
    ) -> tuple[str, dict[str, int]]:
        """A string of a tree under dict key `key` (None: a key itself, a list item, the
        root). A value whose key names a secret (`{"password": "..."}`) is masked whole as
        `password-assignment`. Values found by context go into `known` when given."""
        learned: Known = {} if known is None else known
        new, counts = self._scan(value, learned)
        if counts or key is None or not self._keys.keyed(key, value):
            return new, counts
        _learn(learned, value, KEYED_RULE)
        return marker(KEYED_RULE), {KEYED_RULE: 1}

    def is_clean(self, value: Any) -> bool:
        """True when `mask_tree` would change nothing in `value` (a dict, list or tuple): its
        strings pre-filtered in one pass, the common case at a fraction of a mask each."""
        return tree_is_clean(value, self._rules, self._keys, self.mask_text)

    def mask_tree(self, value: Any, path: str = "$") -> tuple[Any, list[MaskHit]]:
        """Mask every string of a JSON-like value (dict keys too), without recursion.

        Unchanged containers are returned as they are (structural sharing). A dict value whose
        key names a secret is masked whole; a value found by context anywhere in the tree is
        then masked wherever else it stands in the tree (a second walk, only when one was
        found). Hits are ordered by path (indexes numerically) then rule.
        """
        if self.is_clean(value):
            return value, []
        known: Known = {}
        walk = TreeWalk(lambda key, text: self.mask_value(key, text, known), path)
        out = walk.run(value)
        if known:
            again = TreeWalk(lambda _key, text: self.mask_known(text, known), path)
            out = again.run(out)
            for (parts, rule_id), n in again.counts.items():
                walk.note(parts, {rule_id: n})
        return out, [MaskHit(rule, where, n) for rule, where, n in walk.hits()]
