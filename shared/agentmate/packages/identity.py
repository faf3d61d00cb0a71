"""Package identity (prior-art §4.10) and the validation every file passes before it is hashed or stored.

Package hash: one line per file, ``path + "\\0" + sha256hex + "\\0" + size_bytes`` (size in decimal), the lines
sorted (by their UTF-8 bytes), joined with ``"\\n"`` (no trailing newline), and the SHA-256 hex digest of that.
Text and binary files enter it the same way, so a binary file contributes only its hash and size.

Domain: the first segment of a package_path with two or more segments (a flat package has none).
Default source name: every package_path segment joined with ``-`` (platform/retrieval → platform-retrieval).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
import re
from collections.abc import Iterable, Sequence

from agentmate.core.errors import ErrorCollector, FieldError, TooLarge, ValidationFailed, invalid
from agentmate.packages.limits import PackageLimits
from agentmate.packages.schemas import FileInput, Package, PackageFile

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9._-]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")

# Files with these extensions must be valid UTF-8 text without NUL; other files are sniffed (text when they
# decode, binary otherwise).
TEXT_EXTENSIONS = frozenset(
    {
        ".md",
        ".markdown",
        ".mdx",
        ".txt",
        ".rst",
        ".adoc",
        ".yaml",
        ".yml",
        ".json",
        ".jsonl",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".csv",
        ".tsv",
        ".xml",
        ".html",
        ".htm",
        ".css",
        ".svg",
        ".py",
        ".js",
        ".mjs",
        ".ts",
        ".tsx",
        ".jsx",
        ".sh",
        ".bash",
        ".zsh",
        ".ps1",
        ".sql",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".rb",
        ".php",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".swift",
        ".lua",
        ".r",
        ".tex",
        ".env",
        ".gitignore",
        ".j2",
        ".tmpl",
    }
)
_MIME_OVERRIDES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".mdx": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".jsonl": "application/jsonl",
}
# The built-in table only: the system's mime.types would make stored types differ between machines.
_MIME = mimetypes.MimeTypes(filenames=())


class PackageRefused(ValidationFailed):
    """A package refused for what it contains (links, special files, escaping paths, undecodable names)."""

    def __init__(self, message: str) -> None:
        super().__init__([FieldError("package", message)], f"package refused: {message}")


def shown_name(name: str | bytes, limit: int = 160) -> str:
    """A hostile entry name made safe to show and store: bytes that are not UTF-8 as ``\\xNN``, control and
    invisible characters escaped, cut to ``limit`` characters."""
    raw = name if isinstance(name, bytes) else _name_bytes(name)
    pieces: list[str] = []
    length = 0
    for c in raw.decode("utf-8", "backslashreplace"):
        piece = c if c.isprintable() else ascii(c)[1:-1]
        if length + len(piece) > limit:
            return "".join(pieces) + "…"
        pieces.append(piece)
        length += len(piece)
    return "".join(pieces)


def _name_bytes(name: str) -> bytes:
    try:
        return name.encode("utf-8", "surrogateescape")  # what tarfile decoded with surrogateescape
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogatepass")


def entry_name(name: str | bytes, prefix: str = "") -> str:
    """A git tree or tar entry's name as text: names are bytes to git and tar, and one that is not valid UTF-8
    can be neither hashed nor stored, so it is refused naming the entry (escaped: the name is hostile)."""
    raw = name if isinstance(name, bytes) else _name_bytes(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackageRefused(f"{shown_name(prefix.encode() + raw)}: a file name is not valid UTF-8") from exc


def package_hash(files: Iterable[tuple[str, str, int]]) -> str:
    """The canonical package hash over ``(path, sha256hex, size_bytes)`` triples."""
    lines = sorted(f"{path}\0{sha}\0{size}".encode() for path, sha, size in files)
    return hashlib.sha256(b"\n".join(lines)).hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def path_segments(package_path: str) -> list[str]:
    return [s for s in package_path.split("/") if s] if package_path else []


def derive_domain(package_path: str) -> str | None:
    segments = path_segments(package_path)
    return segments[0] if len(segments) >= 2 else None


def derive_name(package_path: str) -> str | None:
    segments = path_segments(package_path)
    return "-".join(segments) or None


def package_path_problem(package_path: str) -> str | None:
    """Why a package_path is unacceptable, or None. '' means the repository root."""
    if package_path == "":
        return None
    if package_path.startswith("/") or package_path.endswith("/"):
        return "must be a relative folder path without leading or trailing '/'"
    for segment in package_path.split("/"):
        if segment in ("", ".", "..") or not _SEGMENT_RE.match(segment):
            return "segments may use letters, digits, '.', '_' and '-' (no empty, '.' or '..' segments)"
    if len(package_path.split("/")) > 16:
        return "at most 16 segments"
    return None


def file_path_problem(path: str, limits: PackageLimits) -> str | None:
    """Why a file path inside a package is unacceptable (traversal, absolute, control characters…), or None."""
    if not path:
        return "must not be empty"
    if len(path) > limits.max_path_length:
        return f"longer than max_path_length={limits.max_path_length}"
    if not _encodable(path):
        return "is not valid UTF-8 (lone surrogate)"
    if _CONTROL_RE.search(path):
        return "contains a NUL or control character"
    if "\\" in path:
        return "must use '/' separators (no backslash)"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "must be relative (no absolute path)"
    segments = path.split("/")
    if any(s in ("", ".", "..") for s in segments):
        return "must not contain empty, '.' or '..' segments (path traversal)"
    if len(segments) > limits.max_path_depth:
        return f"deeper than max_path_depth={limits.max_path_depth}"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _extension(path: str) -> str:
    base = path.rsplit("/", 1)[-1].lower()
    dot = base.rfind(".")
    return base[dot:] if dot > 0 or base.startswith(".") else ""


def guess_mime(path: str, is_text: bool) -> str:
    ext = _extension(path)
    if ext in _MIME_OVERRIDES:
        return _MIME_OVERRIDES[ext]
    guessed, _ = _MIME.guess_type("x" + ext if ext else "x", strict=False)
    if guessed:
        return guessed
    return "text/plain" if is_text else "application/octet-stream"


def decode_text(path: str, data: bytes) -> tuple[str | None, str | None]:
    """(text, problem): text for a UTF-8 file without NUL; None for binary; a problem when a file whose
    extension says text is not valid text."""
    expects_text = _extension(path) in TEXT_EXTENSIONS
    if b"\0" in data:
        return None, "contains a NUL byte" if expects_text else None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "is not valid UTF-8 text" if expects_text else None


def _finish(files: list[PackageFile], limits: PackageLimits, field_prefix: str) -> Package:
    if not files:
        raise invalid(field_prefix, "a package needs at least one file")
    files.sort(key=lambda f: f.path.encode())
    total = sum(f.size_bytes for f in files)
    if total > limits.max_package_bytes:
        raise TooLarge(
            f"package is {total} bytes; the limit is max_package_bytes={limits.max_package_bytes}",
            errors=[
                _fe(field_prefix, f"total size {total} exceeds max_package_bytes={limits.max_package_bytes}")
            ],
        )
    digest = package_hash((f.path, f.sha256, f.size_bytes) for f in files)
    return Package(files=tuple(files), package_hash=digest, total_bytes=total)


def _fe(field: str, message: str) -> FieldError:
    return FieldError(field, message)


def _check_count(n: int, limits: PackageLimits, field: str) -> None:
    if n > limits.max_files:
        raise TooLarge(
            f"package has {n} files; the limit is max_files={limits.max_files}",
            errors=[_fe(field, f"{n} files exceed max_files={limits.max_files}")],
        )


def _too_big(field: str, path: str, size: int, limits: PackageLimits) -> TooLarge:
    return TooLarge(
        f"{path} is {size} bytes; the limit is max_file_bytes={limits.max_file_bytes}",
        errors=[_fe(field, f"{size} bytes exceed max_file_bytes={limits.max_file_bytes}")],
    )


def prepare_snapshot(
    inputs: Sequence[FileInput], limits: PackageLimits, expected_hash: str | None = None
) -> Package:
    """Validate a pushed snapshot into a Package. Every invalid field is reported at once (400); a size limit
    is a 413 naming it. ``expected_hash``, when the client supplied one, must equal the derived hash."""
    _check_count(len(inputs), limits, "files")
    errors = ErrorCollector()
    files: list[PackageFile] = []
    seen: set[str] = set()
    for i, f in enumerate(inputs):
        file = _snapshot_file(f, f"files[{i}]", limits, errors, seen)
        if file is not None:
            files.append(file)
    errors.raise_if_any()
    package = _finish(files, limits, "files")
    if expected_hash is not None and expected_hash != package.package_hash:
        raise invalid("package_hash", f"does not match the files (they hash to {package.package_hash})")
    return package


def _snapshot_file(
    f: FileInput, at: str, limits: PackageLimits, errors: ErrorCollector, seen: set[str]
) -> PackageFile | None:
    """One pushed file, validated; None when it cannot enter the package (its problem is collected, so every
    file is still checked). A size limit raises at once."""
    problem = file_path_problem(f.path, limits)
    if problem:
        errors.add(f"{at}.path", problem)
        return None
    if f.path in seen:
        errors.add(f"{at}.path", "duplicate path in the package")
        return None
    seen.add(f.path)
    given = [k for k in ("content", "content_base64") if getattr(f, k) is not None]
    if len(given) > 1:
        errors.add(at, "send either content or content_base64, not both")
        return None
    if not given:
        return _metadata_only_file(f, at, limits, errors)
    decoded = _decoded_content(f, at, errors)
    if decoded is None:
        return None
    data, text = decoded
    if len(data) > limits.max_file_bytes:
        raise _too_big(
            f"{at}.content" if f.content is not None else f"{at}.content_base64",
            f.path,
            len(data),
            limits,
        )
    digest = sha256_hex(data)
    # Hash and size the client claimed must be the content's own.
    if f.sha256 is not None and f.sha256 != digest:
        errors.add(f"{at}.sha256", f"does not match the content (content hashes to {digest})")
    if f.size_bytes is not None and f.size_bytes != len(data):
        errors.add(f"{at}.size_bytes", f"does not match the content ({len(data)} bytes)")
    return PackageFile(f.path, digest, len(data), f.mime_type or guess_mime(f.path, text is not None), text)


def _metadata_only_file(
    f: FileInput, at: str, limits: PackageLimits, errors: ErrorCollector
) -> PackageFile | None:
    """A binary file sent as metadata only: it contributes its hash and size to identity and stores nothing."""
    if f.sha256 is None or f.size_bytes is None:
        errors.add(at, "send content, content_base64, or (binary files) sha256 and size_bytes")
        return None
    if f.size_bytes > limits.max_file_bytes:
        raise _too_big(f"{at}.size_bytes", f.path, f.size_bytes, limits)
    return PackageFile(f.path, f.sha256, f.size_bytes, f.mime_type or guess_mime(f.path, False), None)


def _decoded_content(f: FileInput, at: str, errors: ErrorCollector) -> tuple[bytes, str | None] | None:
    """The file's bytes and its text (None for binary), from ``content`` or ``content_base64``; None when they
    cannot be read (the problem is collected)."""
    if f.content is not None:
        if "\0" in f.content:
            errors.add(f"{at}.content", "contains a NUL character")
            return None
        try:
            return f.content.encode("utf-8"), f.content
        except UnicodeEncodeError:
            errors.add(f"{at}.content", "is not valid UTF-8 text (lone surrogate)")
            return None
    try:
        data = base64.b64decode(f.content_base64 or "", validate=True)
    except (binascii.Error, ValueError):
        errors.add(f"{at}.content_base64", "is not valid base64")
        return None
    text, problem = decode_text(f.path, data)
    if problem:
        errors.add(f"{at}.content_base64", f"{f.path} {problem}")
        return None
    return data, text


def prepare_raw(raw: Sequence[tuple[str, bytes]], limits: PackageLimits) -> Package:
    """Validate fetched files (paths relative to the package root) into a Package; problems name the path."""
    _check_count(len(raw), limits, "package")
    files: list[PackageFile] = []
    seen: set[str] = set()
    errors = ErrorCollector()
    for path, data in raw:
        problem = file_path_problem(path, limits)
        if problem:
            errors.add("package", f"{path!r}: {problem}")
            continue
        if path in seen:
            errors.add("package", f"{path!r}: duplicate path")
            continue
        seen.add(path)
        if len(data) > limits.max_file_bytes:
            raise _too_big("package", path, len(data), limits)
        text, problem = decode_text(path, data)
        if problem:
            errors.add("package", f"{path} {problem}")
            continue
        files.append(PackageFile(path, sha256_hex(data), len(data), guess_mime(path, text is not None), text))
    if errors.errors:
        raise ValidationFailed(
            errors.errors, "package refused: " + "; ".join(e.message for e in errors.errors[:5])
        )
    return _finish(files, limits, "package")
