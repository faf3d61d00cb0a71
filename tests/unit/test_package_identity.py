"""Package identity (prior-art §4.10) and snapshot validation, without a database."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.core.errors import TooLarge, ValidationFailed
from agentmate.packages.identity import (
    PackageRefused,
    derive_domain,
    derive_name,
    entry_name,
    package_hash,
    prepare_raw,
    prepare_snapshot,
    shown_name,
)
from agentmate.packages.limits import PackageLimits
from agentmate.packages.schemas import FileInput

HELLO_SHA = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"  # printf 'hello\n' | sha256sum
X_SHA = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"  # printf 'x' | sha256sum
# printf 'README.md\0<HELLO_SHA>\06\nb/c.bin\0<X_SHA>\01' | sha256sum
TWO_FILE_HASH = "a8d30c51174d8fc741bfc941f450692708d0946db30791183801b6589226d3f6"


def test_package_hash_matches_a_vector_computed_by_sha256sum():
    # Given the two files of the vector, in reverse order
    files = [("b/c.bin", X_SHA, 1), ("README.md", HELLO_SHA, 6)]
    # Then the hash is the one sha256sum computed over the sorted, NUL-separated lines
    assert package_hash(files) == TWO_FILE_HASH


def test_package_hash_sorts_lines_by_bytes_and_has_no_trailing_newline():
    files = [("é.md", "a" * 64, 3), ("Z.md", "b" * 64, 10), ("a.md", "c" * 64, 0)]
    lines = sorted(
        [
            b"Z.md\x00" + b"b" * 64 + b"\x0010",
            b"a.md\x00" + b"c" * 64 + b"\x000",
            "é.md".encode() + b"\x00" + b"a" * 64 + b"\x003",
        ]
    )
    assert package_hash(files) == hashlib.sha256(b"\n".join(lines)).hexdigest()
    assert package_hash(files) != hashlib.sha256(b"\n".join(lines) + b"\n").hexdigest()


def test_snapshot_text_and_base64_binary_give_the_vector_hash():
    package = prepare_snapshot(
        [
            FileInput(path="b/c.bin", content_base64=base64.b64encode(b"x").decode()),
            FileInput(path="README.md", content="hello\n"),
        ],
        PackageLimits(),
    )
    assert package.package_hash == TWO_FILE_HASH
    assert [f.path for f in package.files] == ["README.md", "b/c.bin"]
    readme, blob = package.files
    assert (readme.text, readme.mime_type, readme.sha256) == ("hello\n", "text/markdown", HELLO_SHA)
    # b"x" decodes as UTF-8, so an unknown extension sniffed as text keeps its snapshot
    assert blob.text == "x"


def test_binary_file_contributes_only_hash_and_size():
    png = b"\x89PNG\r\n\x1a\n\x00\x00"
    sha = hashlib.sha256(png).hexdigest()
    pushed = prepare_snapshot(
        [
            FileInput(path="img/logo.png", content_base64=base64.b64encode(png).decode()),
            FileInput(path="SKILL.md", content="hello\n"),
        ],
        PackageLimits(),
    )
    metadata_only = prepare_snapshot(
        [
            FileInput(path="img/logo.png", sha256=sha, size_bytes=len(png)),
            FileInput(path="SKILL.md", content="hello\n"),
        ],
        PackageLimits(),
    )
    assert pushed.package_hash == metadata_only.package_hash
    assert pushed.file("img/logo.png").text is None
    assert pushed.file("img/logo.png").mime_type == "image/png"


@pytest.mark.parametrize(
    ("package_path", "domain", "name"),
    [
        ("platform/retrieval", "platform", "platform-retrieval"),
        ("a/b/c", "a", "a-b-c"),
        ("flat", None, "flat"),
        ("", None, None),
    ],
)
def test_domain_is_the_first_of_two_or_more_segments_and_name_joins_all(package_path, domain, name):
    assert derive_domain(package_path) == domain
    assert derive_name(package_path) == name


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../escape.md", "path traversal"),
        ("a/../../b.md", "path traversal"),
        ("/etc/passwd", "absolute"),
        ("C:/x.md", "absolute"),
        ("a\\b.md", "backslash"),
        ("a//b.md", "empty"),
        ("./a.md", "'.'"),
        ("a\x00b.md", "NUL"),
    ],
)
def test_hostile_paths_are_refused_naming_the_field(path, message):
    with pytest.raises(ValidationFailed) as err:
        prepare_snapshot(
            [FileInput(path="ok.md", content="x"), FileInput(path=path, content="x")], PackageLimits()
        )
    assert err.value.errors[0].field == "files[1].path"
    assert message in err.value.errors[0].message


def test_nul_and_invalid_utf8_in_text_are_refused():
    bad = [
        FileInput(path="a.md", content="a\x00b"),
        FileInput(path="b.md", content="\ud800"),
        FileInput(path="c.md", content_base64=base64.b64encode(b"\xff\xfe").decode()),
        FileInput(path="d.md", content_base64="not base64!"),
    ]
    with pytest.raises(ValidationFailed) as err:
        prepare_snapshot(bad, PackageLimits())
    assert [e.field for e in err.value.errors] == [
        "files[0].content",
        "files[1].content",
        "files[2].content_base64",
        "files[3].content_base64",
    ]
    with pytest.raises(ValidationFailed) as err:
        prepare_raw([("guide.md", b"bad \xc3\x28 utf8")], PackageLimits())
    assert "guide.md is not valid UTF-8" in err.value.errors[0].message


def test_limits_are_too_large_errors_naming_the_limit():
    limits = PackageLimits(max_files=2, max_file_bytes=10, max_package_bytes=15)
    with pytest.raises(TooLarge, match="max_files=2"):
        prepare_snapshot([FileInput(path=f"{i}.md", content="x") for i in range(3)], limits)
    with pytest.raises(TooLarge, match="max_file_bytes=10") as err:
        prepare_snapshot([FileInput(path="a.md", content="x" * 11)], limits)
    assert err.value.errors[0].field == "files[0].content"
    with pytest.raises(TooLarge, match="max_package_bytes=15"):
        prepare_snapshot(
            [FileInput(path="a.md", content="x" * 8), FileInput(path="b.md", content="y" * 8)], limits
        )


def test_supplied_hashes_must_match_the_content():
    with pytest.raises(ValidationFailed) as err:
        prepare_snapshot([FileInput(path="a.md", content="hello\n", sha256="0" * 64)], PackageLimits())
    assert err.value.errors[0].field == "files[0].sha256"
    with pytest.raises(ValidationFailed) as err:
        prepare_snapshot([FileInput(path="a.md", content="hello\n")], PackageLimits(), expected_hash="0" * 64)
    assert err.value.errors[0].field == "package_hash"


def test_duplicate_paths_and_empty_packages_are_refused():
    with pytest.raises(ValidationFailed, match="files"):
        prepare_snapshot([], PackageLimits())
    with pytest.raises(ValidationFailed) as err:
        prepare_snapshot(
            [FileInput(path="a.md", content="1"), FileInput(path="a.md", content="2")], PackageLimits()
        )
    assert err.value.errors[0].message == "duplicate path in the package"


def test_a_fetched_path_with_a_lone_surrogate_is_refused_not_a_crash():
    # tarfile decodes undecodable name bytes to lone surrogates; they can be neither hashed nor stored
    with pytest.raises(ValidationFailed) as err:
        prepare_raw([("ok.md", b"x"), ("caf\udcff.md", b"y")], PackageLimits())
    assert err.value.errors[0].message == "'caf\\udcff.md': is not valid UTF-8 (lone surrogate)"


@settings(max_examples=300, deadline=None, database=None)
@given(st.binary(max_size=80) | st.text(max_size=40).map(str.encode))
def test_entry_names_decode_exactly_or_are_refused_shown_safely(raw):
    try:
        name = entry_name(raw)
    except PackageRefused as exc:
        message = exc.errors[0].message
        message.encode("utf-8")
        assert all(c.isprintable() for c in message)
        assert message.startswith(shown_name(raw))
    else:
        assert name.encode("utf-8") == raw


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(max_size=300) | st.binary(max_size=300))
def test_shown_names_are_printable_bounded_and_storable(name):
    shown = shown_name(name, limit=100)
    shown.encode("utf-8")
    assert all(c.isprintable() for c in shown) and len(shown) <= 101
