"""The masker's walk over JSON-like trees, and the fast path that skips it for clean trees.

`TreeWalk` visits every string of a tree (dict keys too) without recursion and copies a
container only once something in it changes (structural sharing). What it does to a string is
the caller's (`Visit`), so one walk serves both passes of `Masker.mask_tree`: find the secrets,
then mask the values found by context wherever else they stand. `tree_is_clean` answers, at a
fraction of the walk's cost, that the walk would change nothing (the common case).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, Final

import orjson

from schemas.issue import child_path
from streams.core.leak_compile import RuleSet
from streams.core.leak_rules import SECRET_KEY_BODY, is_placeholder
from streams.core.leak_views import decoded_text, invisible_in_utf8, may_hide

__all__ = ["SecretKeys", "TreeWalk", "Visit", "tree_is_clean"]

# (dict key of the string or None, the string) -> (the string masked, counts per rule id).
Visit = Callable[[str | None, str], tuple[str, dict[str, int]]]
Hit = tuple[str, str, int]  # (rule id, JSON path, count)

_SECRET_KEY = re.compile(f"(?i){SECRET_KEY_BODY}")
_KEY_CACHE_SIZE = 4096
_MAX_KEY = 80


class SecretKeys:
    """Judges dict keys that name a secret (`password`, `OPENAI_API_KEY`, `clientSecret`); the
    answers are kept per masker (keys repeat a lot), bounded."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}

    def names_secret(self, key: str) -> bool:
        known = self._known.get(key)
        if known is None:
            plain = decoded_text(key)
            known = len(plain) <= _MAX_KEY and _SECRET_KEY.fullmatch(plain) is not None
            if len(self._known) >= _KEY_CACHE_SIZE:
                self._known.clear()
            self._known[key] = known
        return known

    def keyed(self, key: str, value: str) -> bool:
        """A value masked whole for its key's name (`{"password": "..."}`), placeholders aside:
        the same judgement as for a quoted literal after `key =`."""
        return self.names_secret(key) and not (
            len(value) < 3 or is_placeholder(value) or any(c.isspace() for c in value.strip())
        )


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


_DONE: Final = object()


class TreeWalk:
    """One iterative walk of a tree: `visit` masks each string, hits are counted by path."""

    __slots__ = ("base", "counts", "visit")

    def __init__(self, visit: Visit, base: str) -> None:
        self.visit = visit
        self.base = base
        self.counts: dict[tuple[tuple[str | int, ...], str], int] = {}

    def note(self, parts: tuple[str | int, ...], counts: Mapping[str, int]) -> None:
        for rule_id, n in counts.items():
            k = (parts, rule_id)
            self.counts[k] = self.counts.get(k, 0) + n

    def hits(self) -> list[Hit]:
        """(rule, path, count), ordered by path (indexes numerically) then rule."""
        ordered = sorted(self.counts.items(), key=lambda kv: (_sort_key(kv[0][0]), kv[0][1]))
        return [(rule, child_path(self.base, *parts), n) for (parts, rule), n in ordered]

    def run(self, value: Any) -> Any:
        if isinstance(value, str):
            new, counts = self.visit(None, value)
            self.note((), counts)
            return new
        if not isinstance(value, (dict, list, tuple)):
            return value
        stack = [_Frame(value, None, None)]
        open_ids = {id(value)}
        result: Any = value
        while stack:
            frame = stack[-1]
            item: Any = next(frame.items, _DONE)
            if item is _DONE:
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
                new_child, counts = self.visit(key if isinstance(key, str) else None, child)
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
        new_key, counts = self.visit(None, key)
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


def tree_is_clean(
    value: Any, rules: RuleSet, keys: SecretKeys, mask_text: Callable[[str], Any]
) -> bool:
    """True when the walk would change nothing: the common case, at a fraction of its cost.

    The walk costs a Python frame per string. Most trees have no string with a decoded view:
    their JSON is pre-filtered whole (`_plain_json`). Otherwise the strings without views (no
    escapes, markup or invisible characters) are joined by newlines and pre-filtered in one
    pass. No trigger is anchored to a text edge (`rules.joinable`) and a newline reads like one
    to `\\b`, so a match inside any one string is a match in the join. The other strings go
    through `mask_text` one by one; secret-named keys are judged as the walk judges them.
    """
    if not rules.joinable or not isinstance(value, (dict, list, tuple)):
        return False
    dump = _plain_json(value)
    if dump is not None:
        return rules.tree_filter(dump, 0) is None
    texts = _tree_texts(value)
    if texts is None:
        return False
    strings, keyed = texts
    plain: list[str] = []
    others: list[str] = []
    for text in strings:
        (others if may_hide(text) else plain).append(text)
    if plain and rules.hit("\n".join(plain).encode("utf-8", "surrogatepass")):
        return False
    if any(mask_text(text)[1] for text in others):
        return False
    return not any(keys.keyed(k, v) for k, v in keyed)


# The JSON escapes of a string without a backslash of its own, and what they stand for.
_UNESCAPES: Final = ((b"\\n", b"\n"), (b"\\t", b"\t"), (b"\\r", b"\r"), (b'\\"', b'"'))


def _plain_json(value: Any) -> bytes | None:
    """The tree as JSON (one C-level pass instead of a Python step per string) with its strings
    unescaped, when none of them has a decoded view; else None.

    No backslash, `&`, `%`, `<` or invisible character is stricter than what `may_hide` asks
    of each string (other non-ASCII text has no view). Every string then stands in the text as
    it is, between quotes, which read like the join's newlines to `\\b`: a trigger matching in
    one string matches in the text.
    """
    try:
        dump = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError too: non-str keys, surrogates, cycles, depth
        return None
    if b"&" in dump or b"%" in dump or b"<" in dump:
        return None  # unescaping cannot make or remove these: first, before the copies
    if not dump.isascii() and invisible_in_utf8(dump):
        return None
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
