"""Small normalisers shared by the record domains."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

MAX_TAGS = 50
MAX_TAG_LENGTH = 64
MAX_CONTENT_BYTES = 1_048_576  # 1 MiB of UTF-8 for note/report/bookmark bodies


def no_nul(value: str) -> str:
    """Postgres text cannot hold U+0000: reject it as a field error instead of failing the insert."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (U+0000) characters")
    return value


def within_content_limit(value: str) -> str:
    if len(value.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise ValueError(f"must be at most {MAX_CONTENT_BYTES} bytes (UTF-8)")
    return value


def normalise_tag(tag: str) -> str:
    return tag.strip().lower()


def normalise_tags(value: object) -> object:
    """Trim and lowercase tags, drop blanks and duplicates (first occurrence wins). ``null`` is not a list: the
    OpenAPI says array, so it is refused like any other non-list (omit the field for no tags)."""
    if not isinstance(value, list):
        return value  # let pydantic report the type error
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            return value
        tag = normalise_tag(no_nul(item))
        if tag and tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    if any(len(t) > MAX_TAG_LENGTH for t in out):
        raise ValueError(f"each tag is at most {MAX_TAG_LENGTH} characters")
    return out


Tags = Annotated[list[str], BeforeValidator(normalise_tags)]
# Bodies are stored verbatim (never trimmed): appends rely on the caller's own whitespace.
Content = Annotated[str, AfterValidator(no_nul), AfterValidator(within_content_limit)]


def tag_filter(tag: str | None, tags: str | None) -> list[str]:
    """Combine ``tag=`` and comma-separated ``tags=`` query values into normalised tags (blank = absent)."""
    found: list[str] = []
    for raw in [tag or "", *(tags or "").split(",")]:
        t = normalise_tag(raw)
        if t and t not in found:
            found.append(t)
    return found


def blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None
