"""Character references as the WHATWG tokenizer reads them, and the parse errors they raise.

html5lib's tokenizer predates the WHATWG error list: it reports `AT&T` and `href="?a=1&b=2"`
(no error in HTML5) and misses `&rrrraannddom;`. So its reference errors are dropped and this
module finds them instead, exactly as the spec's character reference states do: a named
reference is the longest name of the table (`html.entities.html5`, with or without `;`), a
legacy name without `;` is `missing-semicolon-after-character-reference` (in an attribute
value, followed by `=` or a letter or digit, it is no reference at all), an unknown name ended
by `;` is `unknown-named-character-reference`, and numeric references are checked for digits,
`;` and the code points the spec refuses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.entities import html5
from typing import Final

_NAMES: Final = frozenset(html5)
_LONGEST_NAME: Final = max(len(name) for name in html5)
_REFERENCE_START_RE = re.compile(r"&(?=[#A-Za-z0-9])", re.ASCII)
_ALNUM_RE = re.compile(r"[A-Za-z0-9]+", re.ASCII)
_HEX_RE = re.compile(r"[0-9A-Fa-f]+", re.ASCII)
_DEC_RE = re.compile(r"[0-9]+", re.ASCII)
# `&` then what may still become a reference once more text follows: cut off at the end.
TRAILING_REFERENCE_RE = re.compile(r"&[#A-Za-z0-9]*\Z", re.ASCII)
# Our name for a reference cut off by the end of the answer (HTML5 has none: the text ends).
CUT_REFERENCE: Final = "eof-in-character-reference"
# Digits beyond this many cannot change the verdict (the value is out of range already).
_MAX_DIGITS: Final = 8


def _is_noncharacter(value: int) -> bool:
    return 0xFDD0 <= value <= 0xFDEF or (value & 0xFFFE) == 0xFFFE


def _is_control_reference(value: int) -> bool:
    """A control the spec refuses as a reference: CR, or a C0/C1 control that is not ASCII
    whitespace (tab, LF, FF and space pass)."""
    if value == 0x0D:
        return True
    if value < 0x20:
        return value not in (0x09, 0x0A, 0x0C)
    return 0x7F <= value <= 0x9F


def _numeric(text: str, amp: int) -> Iterator[tuple[int, str]]:
    pos = amp + 2
    is_hex = pos < len(text) and text[pos] in "xX"
    if is_hex:
        pos += 1
    digits = (_HEX_RE if is_hex else _DEC_RE).match(text, pos)
    if digits is None:
        yield amp, "absence-of-digits-in-numeric-character-reference"
        return
    end = digits.end()
    if not text.startswith(";", end):
        yield amp, "missing-semicolon-after-character-reference"
    written = digits.group().lstrip("0") or "0"
    value = 0x110000 if len(written) > _MAX_DIGITS else int(written, 16 if is_hex else 10)
    if value == 0:
        yield amp, "null-character-reference"
    elif value > 0x10FFFF:
        yield amp, "character-reference-outside-unicode-range"
    elif 0xD800 <= value <= 0xDFFF:
        yield amp, "surrogate-character-reference"
    elif _is_noncharacter(value):
        yield amp, "noncharacter-character-reference"
    elif _is_control_reference(value):
        yield amp, "control-character-reference"


def _named(text: str, amp: int, in_attribute: bool) -> Iterator[tuple[int, str]]:
    run = _ALNUM_RE.match(text, amp + 1)
    if run is None:
        return  # `&` before a blank, `<`, `&` or the end: plain text, no error
    name = run.group()
    after = run.end()
    if text.startswith(";", after) and len(name) < _LONGEST_NAME and name + ";" in _NAMES:
        return
    for size in range(min(len(name), _LONGEST_NAME), 1, -1):
        if name[:size] in _NAMES:  # a legacy name written without `;`
            nxt = text[amp + 1 + size : amp + 2 + size]
            if in_attribute and (nxt == "=" or (nxt.isascii() and nxt.isalnum())):
                return  # historical: not a reference in an attribute value
            yield amp, "missing-semicolon-after-character-reference"
            return
    if text.startswith(";", after):
        yield amp, "unknown-named-character-reference"


def reference_errors(text: str, *, in_attribute: bool = False) -> Iterator[tuple[int, str]]:
    """(offset of the `&`, WHATWG error code) for every reference error in text or a value.
    Only an `&` before `#`, a letter or a digit starts a reference (found by one regex scan:
    a megabyte of bare `&` costs no Python loop)."""
    for found in _REFERENCE_START_RE.finditer(text):
        amp = found.start()
        if text.startswith("#", amp + 1):
            yield from _numeric(text, amp)
        else:
            yield from _named(text, amp, in_attribute)
