"""Integers beyond 64 bits in JSON text: found before they are silently changed.

Records and replies are read with orjson, whose integers are 64-bit: a literal such as
123456789012345678901234567890 comes back as the float 1.2345678901234568e+29, and every record
the gate writes goes through orjson again. Nothing is coerced, and such an integer cannot be
carried exactly, so it is refused with `integer_out_of_range` (send it as a string instead).
Literals written as floats (`1e30`, `2.5`) are floats and stay as they are.

Cost: one search for a run of 19 digits rules out almost every text (about 2 ms per MB); only
then is the text tokenized (strings skipped whole, numbers whole), linear in its length.
"""

from __future__ import annotations

import re
from typing import Final

from schemas.errors import Issue

__all__ = ["INT_MAX", "INT_MIN", "wide_integer"]

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
        digits = len(literal.lstrip("-").lstrip("0"))
        if digits > 20 or not INT_MIN <= int(literal) <= INT_MAX:
            return Issue(
                "$",
                "integer_out_of_range",
                f"the integer at character {match.start(1)} has {digits} digits, beyond the "
                "64-bit range it could be carried in exactly; send it as a string",
            )
    return None
