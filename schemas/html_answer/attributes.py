"""The attribute rules of `assistant.html.v1`: exact classes, canonical URIs, image sources."""

from __future__ import annotations

from collections.abc import Mapping

import re2
from selectolax.lexbor import LexborNode

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
        walk.issues.add(path, parsed.code, f"{value[:200]!r} {parsed.message}")
        return
    if http_only and parsed.scheme not in ("http", "https"):
        walk.issues.add(
            path, "invalid_attribute_value", f"{value[:200]!r} must be an absolute http(s) URL"
        )
        return
    walk.cite(parsed, path)


def _expect(walk: Walk, path: str, attrs: Mapping[str, str], name: str, wanted: str) -> None:
    value = attrs.get(name)
    if value is None:
        walk.issues.add(f"{path}@{name}", "missing_attribute", f'is required: {name}="{wanted}"')
    elif value != wanted:
        walk.issues.add(
            f"{path}@{name}",
            "invalid_attribute_value",
            f'is {value[:100]!r}; must be exactly "{wanted}"',
        )


def _disallow_others(
    walk: Walk, path: str, attrs: Mapping[str, str], allowed: frozenset[str], tag: str
) -> None:
    for name in attrs:
        if name not in allowed:
            hint = ", ".join(sorted(allowed)) if allowed else "none"
            walk.issues.add(
                f"{path}@{name[:60]}",
                "disallowed_attribute",
                f"<{tag}> may not have this attribute (allowed: {hint})",
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
        walk.issues.add(
            f"{path}@id",
            "missing_attribute",
            'is required with class="info-source": id="URI(;URI)*"',
        )
        return
    for item in sources.split(";"):
        check_uri_attr(walk, f"{path}@id", item)


def _check_a(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _A_ATTRS, "a")
    _expect(walk, path, attrs, "class", "http-source")
    _expect(walk, path, attrs, "target", "_blank")
    href = attrs.get("href")
    if href is None:
        walk.issues.add(f"{path}@href", "missing_attribute", "is required: an absolute http(s) URL")
    else:
        check_uri_attr(walk, f"{path}@href", href, http_only=True)


def _check_img(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _IMG_ATTRS, "img")
    _expect(walk, path, attrs, "class", "img-source")
    src = attrs.get("src")
    if src is None:
        walk.issues.add(f"{path}@src", "missing_attribute", "is required: /document/<uuid>.<ext>")
    elif not (src.isascii() and _IMG_SRC_RE.fullmatch(src)):
        walk.issues.add(
            f"{path}@src",
            "invalid_attribute_value",
            f"{src[:200]!r} must be /document/<uuid>.<ext> (uuid as 8-4-4-4-12 hex; "
            "ext png, jpg, jpeg, gif, webp or svg)",
        )
    alt = attrs.get("alt")
    if alt is None:
        walk.issues.add(f"{path}@alt", "missing_attribute", "is required: describe the image")
    elif not alt.strip():
        walk.issues.add(f"{path}@alt", "invalid_attribute_value", "is blank; describe the image")


def _check_div(walk: Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _DIV_ATTRS, "div")
    cls = attrs.get("class")
    if cls is None:
        walk.issues.add(
            f"{path}@class",
            "missing_attribute",
            'is required: "blockquote" or "blockquote doc-embed"',
        )
    elif cls not in BLOCKQUOTE_CLASSES:
        walk.issues.add(
            f"{path}@class",
            "invalid_attribute_value",
            f'is {cls[:100]!r}; must be exactly "blockquote" or "blockquote doc-embed"',
        )
    source = attrs.get("data-source")
    if source is None:
        walk.issues.add(f"{path}@data-source", "missing_attribute", "is required: a canonical URI")
    else:
        check_uri_attr(walk, f"{path}@data-source", source)


def _check_id_only(walk: Walk, path: str, attrs: Mapping[str, str], tag: str) -> None:
    _disallow_others(walk, path, attrs, _ID_ONLY, tag)
    element_id = attrs.get("id")
    if element_id is not None and not is_element_id(element_id):
        walk.issues.add(
            f"{path}@id",
            "invalid_attribute_value",
            f"{element_id[:100]!r} is not an element ID ([A-Za-z0-9_-]+)",
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
