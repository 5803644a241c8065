"""pydantic's validation errors as our Issues (its error types mapped onto the stable codes)."""

from __future__ import annotations

from pydantic import ValidationError

from schemas.codes import SHARED_CODES
from schemas.issue import Issue, child_path

# pydantic's error types, mapped onto our stable codes (schemas/codes.py).
_CODES: dict[str, str] = {
    "extra_forbidden": "unknown_field",
    "missing": "missing_field",
    "string_too_short": "too_short",
    "string_too_long": "too_long",
    "too_short": "too_short",
    "too_long": "too_long",
    "literal_error": "invalid_value",
    "enum": "invalid_value",
    "finite_number": "not_finite",
    "greater_than_equal": "out_of_range",
    "less_than_equal": "out_of_range",
    "greater_than": "out_of_range",
    "less_than": "out_of_range",
    "string_pattern_mismatch": "invalid_format",
    "url_parsing": "invalid_url",
    "url_scheme": "invalid_url",
    "datetime_from_date_parsing": "invalid_datetime",
    "datetime_parsing": "invalid_datetime",
    "datetime_type": "wrong_type",
}
# The codes worded by their own template rather than by pydantic's message.
_OUR_WORDING = frozenset({"unknown_field", "missing_field"})
_UNION_MEMBER_TYPES = {"str", "int", "float", "bool", "none", "list", "dict", "bytes"}


def _code_for(error_type: str) -> str:
    """Our stable code for a pydantic error type; one we do not know is `invalid_value`.

    A custom error raised with a registered code as its type (`PydanticCustomError`) keeps it.
    """
    if error_type in _CODES:
        return _CODES[error_type]
    if error_type.endswith("_type") or error_type in ("model_type", "dict_type", "list_type"):
        return "wrong_type"
    if error_type in SHARED_CODES:
        return error_type
    return "invalid_value"


def issues_from_validation_error(exc: ValidationError, base: str = "$") -> list[Issue]:
    """Turn pydantic errors into Issues; union-branch errors collapse into one `wrong_type`."""
    issues: list[Issue] = []
    seen_union: set[tuple[str | int, ...]] = set()
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        if loc and isinstance(loc[-1], str) and loc[-1] in _UNION_MEMBER_TYPES:
            parent = loc[:-1]
            if parent in seen_union:
                continue
            seen_union.add(parent)
            issues.append(SHARED_CODES["wrong_type"].issue(child_path(base, *parent), "union"))
            continue
        code = _code_for(err["type"])
        if code in _OUR_WORDING:  # the code's own template, not pydantic's message
            issues.append(SHARED_CODES[code].issue(child_path(base, *loc)))
        else:
            issues.append(Issue(child_path(base, *loc), code, err["msg"]))
    return issues
