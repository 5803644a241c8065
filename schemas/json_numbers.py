"""Integers beyond 64 bits in JSON text: found before they are silently changed.

Records and replies are read with orjson, whose integers are 64-bit: a literal such as
123456789012345678901234567890 comes back as the float 1.2345678901234568e+29, and every record
the gate writes goes through orjson again. Nothing is coerced, and such an integer cannot be
carried exactly, so it is refused with `integer_out_of_range` (send it as a string instead).
Literals written as floats (`1e30`, `2.5`) are floats and stay as they are.

Cost: one search for a run of 19 digits rules out almost every text; only then is the text
tokenized (strings skipped whole, numbers whole), linear in its length (figures: bench/README.md).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

import orjson

from schemas.codes import INTEGER_OUT_OF_RANGE, LONE_SURROGATE, NOT_FINITE, WRONG_TYPE
from schemas.issue import Issue, child_path

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "WideNumber",
    "as_written",
    "loads_wide",
    "unsendable_issues",
    "wide_integer",
    "wide_number_issues",
]

INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**64 - 1  # orjson reads unsigned 64-bit integers exactly too

# The shortest literal out of range has 19 digits (-9223372036854775809). Looked for in the
# UTF-8 bytes with each ASCII digit made `0` and every other byte a blank (`bytes.translate`,
# then a substring test): half the time of an RE2 search through its Python binding, and the
# same answer as `[0-9]{19}` (no byte of a multi-byte character is in 0x30-0x39).
_DIGITS_AS_ZERO: Final = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN: Final = b"0" * 19


def _has_long_run(data: bytes) -> bool:
    """Whether `data` holds 19 ASCII digits in a row."""
    return _LONG_RUN in data.translate(_DIGITS_AS_ZERO)


# A JSON string (skipped), or an integer literal of 19+ digits that is not part of a number
# with a fraction or exponent. Possessive runs: no backtracking, one pass.
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"|(?<![0-9.eE+\-])(-?[0-9]{19,}+)(?![.eE])')


def wide_integer(text: str | bytes) -> Issue | None:
    """The issue for the first integer literal outside [-2**63, 2**64) in JSON text, if any.

    `text` must already be valid JSON (every string closed); the issue names its position and
    digit count, never the value."""
    if isinstance(text, bytes):
        if not _has_long_run(text):
            return None
        text = text.decode("utf-8", "replace")
    elif not _has_long_run(text.encode("utf-8", "surrogatepass")):
        return None
    for match in _TOKEN.finditer(text):
        literal = match.group(1)
        if literal is None:
            continue
        digits = _wide_digits(literal)
        if digits is not None:
            return INTEGER_OUT_OF_RANGE.issue("$", "at", at=match.start(1), digits=digits)
    return None


def _wide_digits(literal: str) -> int | None:
    """The digits of an integer literal outside [-2**63, 2**64), None when it fits (int() is
    not tried on more than 20 digits: such a literal is out of range whatever they are)."""
    digits = len(literal.lstrip("-").lstrip("0"))
    return digits if digits > 20 or not INT_MIN <= int(literal) <= INT_MAX else None


# ---- numbers no 64-bit value holds, inside a reply or a tool call's arguments ----------------


class WideNumber:
    """A JSON number kept as written because no 64-bit value holds it (an integer beyond
    [-2**63, 2**64) or a float literal beyond the double range, such as `1e400`).

    The record around it is valid JSON, so only the reply or arguments that hold it are
    invalid: the contract names its path (`wide_number_issues`). orjson cannot write it, so
    nothing that holds one is ever delivered; a correction request shows it as written
    (`as_written`). Not a dataclass: orjson would write a dataclass as an object."""

    __slots__ = ("integer", "literal")

    def __init__(self, literal: str, integer: bool) -> None:
        self.literal = literal
        self.integer = integer

    def __repr__(self) -> str:
        return f"WideNumber({self.literal!r})"


def _integer(literal: str) -> int | WideNumber:
    return int(literal) if _wide_digits(literal) is None else WideNumber(literal, True)


def _float(literal: str) -> float | WideNumber:
    value = float(literal)
    return value if math.isfinite(value) else WideNumber(literal, False)


def _constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not JSON")


def loads_wide(data: bytes) -> Any:
    """`data` parsed with every number it holds kept exactly: a WideNumber where orjson would
    change it (an integer read as a float) or refuse it (a float literal beyond the doubles).

    Raises ValueError for what is not one JSON value orjson would carry: the standard library's
    parser is looser (other encodings, NaN, lone surrogates), so its result is written again
    by orjson before it is trusted. The caller has bounded `data` (`max_record_bytes`)."""
    try:
        value = json.loads(
            data.decode("utf-8"), parse_int=_integer, parse_float=_float, parse_constant=_constant
        )
        orjson.dumps(value, default=as_written)
    except (RecursionError, TypeError, UnicodeDecodeError, orjson.JSONEncodeError) as exc:
        raise ValueError(str(exc)) from None
    return value


def as_written(value: Any) -> Any:
    """orjson's `default`: a WideNumber is written back exactly as it came."""
    if isinstance(value, WideNumber):
        return orjson.Fragment(value.literal)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def wide_number_issues(value: Any, base: str = "$", limit: int = 100) -> list[Issue]:
    """One issue per WideNumber in `value` (at most `limit`), at its path under `base`.

    Called only once orjson has refused to write `value`, so a valid reply pays nothing."""
    issues: list[Issue] = []
    stack: list[tuple[str, Any]] = [(base, value)]
    while stack and len(issues) < limit:
        path, node = stack.pop()
        if isinstance(node, WideNumber):
            issues.append(_wide_issue(path, node))
        elif isinstance(node, dict):
            stack.extend((child_path(path, str(k)), v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((child_path(path, i), v) for i, v in reversed(list(enumerate(node))))
    return issues


def _wide_issue(path: str, number: WideNumber) -> Issue:
    if number.integer:
        digits = _wide_digits(number.literal)
        return INTEGER_OUT_OF_RANGE.issue(path, digits=digits)
    return NOT_FINITE.issue(path)


# ---- a Python value about to be sent as JSON: refused, never coerced ---------------------------

_SCALARS: Final = (str, bool, type(None))


def unsendable_issues(value: Any, base: str = "$", limit: int = 100) -> list[Issue]:
    """Why `value` cannot be sent as the JSON it claims to be, at each path (at most `limit`):
    NaN and infinities (JSON has none; a JSON mode writes `null`), integers outside
    [-2**63, 2**64) (no reader carries them exactly), a string with a lone surrogate, a key
    that is not a string, anything that is not a JSON value. Nothing is converted."""
    issues: list[Issue] = []
    stack: list[tuple[str, Any]] = [(base, value)]
    while stack and len(issues) < limit:
        path, node = stack.pop()
        if isinstance(node, dict):
            for key, child in reversed(list(node.items())):
                if not isinstance(key, str):
                    issues.append(WRONG_TYPE.issue(child_path(path, str(key)), "key"))
                    continue
                stack.append((child_path(path, key), child))
        elif isinstance(node, list | tuple):
            stack.extend((child_path(path, i), v) for i, v in reversed(list(enumerate(node))))
        elif isinstance(node, str):
            if _has_lone_surrogate(node):
                issues.append(LONE_SURROGATE.issue(path))
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int):
            if not INT_MIN <= node <= INT_MAX:
                issues.append(INTEGER_OUT_OF_RANGE.issue(path, digits=len(str(abs(node)))))
        elif isinstance(node, float):
            if not math.isfinite(node):
                issues.append(NOT_FINITE.issue(path, "nan"))
        else:
            issues.append(WRONG_TYPE.issue(path, "json", kind=type(node).__name__))
    return issues


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
