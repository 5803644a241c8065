"""The attribute rules of `assistant.html.v1`: exact classes, canonical URIs, image sources."""

from __future__ import annotations

from collections.abc import Mapping

import re2
from selectolax.lexbor import LexborNode

from schemas.html_answer.codes import (
    DISALLOWED_ATTRIBUTE,
    INVALID_ATTRIBUTE_VALUE,
    MISSING_ATTRIBUTE,
    uri_issue,
)
from schemas.html_answer.rules import BLOCKQUOTE_CLASSES
from schemas.html_answer.state import Walk
from schemas.uris import UriError, is_element_id, parse_uri

_IMG_SRC_RE = re2.compile(
    r"/document/[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"\.(?:png|jpg|jpeg|gif|webp|svg)"
)


def check_uri_attr(walk: Walk, path: str, value: str, *, http_only: bool = False) -> None:
    parsed = parse_uri(value)
    if isinstance(parsed, UriError):
        walk.issues.add(uri_issue(parsed, path))
        return
    if http_only and parsed.scheme not in ("http", "https"):
        walk.issues.add(INVALID_ATTRIBUTE_VALUE.issue(path, "http_only", value=value[:200]))
        return
    walk.cite(parsed, path)


def _expect(walk: Walk, path: str, attrs: Mapping[str, str], name: str, wanted: str) -> None:
    value = attrs.get(name)
    if value is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@{name}", name=name, value=wanted))
    elif value != wanted:
        walk.issues.add(
            INVALID_ATTRIBUTE_VALUE.issue(f"{path}@{name}", value=value[:100], wanted=wanted)
        )


def _disallow_others(
    walk: Walk, path: str, attrs: Mapping[str, str], allowed: frozenset[str], tag: str
) -> None:
    for name in attrs:
        if name not in allowed:
            hint = ", ".join(sorted(allowed)) if allowed else "none"
            walk.issues.add(
                DISALLOWED_ATTRIBUTE.issue(f"{path}@{name[:60]}", tag=tag, allowed=hint)
            )


_B_ATTRS = frozenset({"class", "id"})
_A_ATTRS = frozenset({"class", "target", "href"})
_IMG_ATTRS = frozenset({"class", "src", "alt"})
_DIV_ATTRS = frozenset({"class", "data-source"})
_ID_ONLY = frozenset({"id"})
_NONE: frozenset[str] = frozenset()


def _check_b(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _B_ATTRS, "b")
    if "class" not in attrs and "id" not in attrs:
        return
    _expect(walk, path, attrs, "class", "info-source")
    sources = attrs.get("id")
    if sources is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@id", "info_source_id"))
        return
    for item in sources.split(";"):
        check_uri_attr(walk, f"{path}@id", item)


def _check_a(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _A_ATTRS, "a")
    _expect(walk, path, attrs, "class", "http-source")
    _expect(walk, path, attrs, "target", "_blank")
    href = attrs.get("href")
    if href is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@href", "href"))
    else:
        check_uri_attr(walk, f"{path}@href", href, http_only=True)


def _check_img(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _IMG_ATTRS, "img")
    _expect(walk, path, attrs, "class", "img-source")
    src = attrs.get("src")
    if src is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@src", "src"))
    elif not (src.isascii() and _IMG_SRC_RE.fullmatch(src)):
        walk.issues.add(INVALID_ATTRIBUTE_VALUE.issue(f"{path}@src", "src", value=src[:200]))
    alt = attrs.get("alt")
    if alt is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@alt", "alt"))
    elif not alt.strip():
        walk.issues.add(INVALID_ATTRIBUTE_VALUE.issue(f"{path}@alt", "blank_alt"))


def _check_div(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _DIV_ATTRS, "div")
    cls = attrs.get("class")
    if cls is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@class", "blockquote_class"))
    elif cls not in BLOCKQUOTE_CLASSES:
        walk.issues.add(
            INVALID_ATTRIBUTE_VALUE.issue(f"{path}@class", "blockquote_class", value=cls[:100])
        )
    source = attrs.get("data-source")
    if source is None:
        walk.issues.add(MISSING_ATTRIBUTE.issue(f"{path}@data-source", "data_source"))
    else:
        check_uri_attr(walk, f"{path}@data-source", source)


def _check_id_only(walk: Walk, path: str, attrs: Mapping[str, str], tag: str) -> None:
    _disallow_others(walk, path, attrs, _ID_ONLY, tag)
    element_id = attrs.get("id")
    if element_id is not None and not is_element_id(element_id):
        walk.issues.add(
            INVALID_ATTRIBUTE_VALUE.issue(f"{path}@id", "element_id", value=element_id[:100])
        )


def check_attributes(walk: Walk, tag: str, path: str, attrs: Mapping[str, str]) -> None:
    if tag == "b":
        _check_b(walk, path, attrs)
    elif tag == "a":
        _check_a(walk, path, attrs)
    elif tag == "img":
        _check_img(walk, path, attrs)
    elif tag == "div":
        _check_div(walk, path, attrs)
    elif tag in ("p", "li"):
        _check_id_only(walk, path, attrs, tag)
    elif attrs:
        _disallow_others(walk, path, attrs, _NONE, tag)


def read_attributes(node: LexborNode) -> dict[str, str]:
    return {name: value or "" for name, value in node.attributes.items()}
