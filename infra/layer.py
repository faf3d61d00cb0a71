"""The shared Lambda layer: built for arm64 (aarch64) from wheels only, pruned, stripped, checked and measured.

    python3.12 infra/layer.py build ARTIFACTS_DIR     # `sam build` runs it (shared/Makefile, BuildMethod makefile)
    python3 infra/layer.py check LAYER_DIR [--limit-mib 150] [--top 12]
                                                      # scripts/build-layer.sh, after the bytecode precompile

``build`` installs shared/requirements.txt into ARTIFACTS_DIR/python with pip's cross-platform options (wheels for
``manylinux_2_17``..``manylinux_2_34`` aarch64 only, CPython 3.12: the Lambda python3.12 runtime is Amazon Linux 2023,
glibc 2.34), copies the ``agentmate`` package without the offline embedding model (a deployment embeds over HTTP:
docs/deploy.md §3), then prunes what no function imports (tests, C headers and sources, ``.pyi`` stubs, bytecode,
console scripts, docs inside third-party packages), strips the shared objects with a strip that knows aarch64
(``aarch64-linux-gnu-strip``, Debian's binutils-aarch64-linux-gnu; skipped with a warning where there is none) and
fails unless every ELF file in the layer is an aarch64 one.

``check`` is the CI gate: every ELF file aarch64, the layer's unzipped bytes at most the limit, and the largest
distributions printed (sizes grouped by each wheel's RECORD, so ``numpy.libs`` counts as numpy's).

Standard library only: it runs under the build's python3.12, which has none of the project's packages.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "shared" / "requirements.txt"
PACKAGE = ROOT / "shared" / "agentmate"

EM_AARCH64 = 183  # ELF e_machine values (System V ABI)
EM_X86_64 = 62
MACHINES = {3: "x86", EM_X86_64: "x86_64", 40: "arm", EM_AARCH64: "aarch64", 243: "riscv", 21: "ppc64"}
# The layer's architecture; x86_64 only to import-test the pruned layer on an x86_64 machine (--arch x86_64).
ARCHES = {"aarch64": EM_AARCH64, "x86_64": EM_X86_64}
ELF_MAGIC = b"\x7fELF"
SHT_SYMTAB = 2

PYTHON_VERSION = "3.12"


# pip does not widen a manylinux_2_N platform to older glibc tags: name each one the runtime's glibc (2.34) runs.
def platforms(arch: str = "aarch64") -> list[str]:
    return [f"manylinux_2_{minor}_{arch}" for minor in range(34, 16, -1)] + [f"manylinux2014_{arch}"]


# Inside the agentmate package: the offline embedder's model (the `local` extra's, not a deployment's).
PACKAGE_EXCLUDES = ("retrieval/models",)
PRUNED_DIRS = frozenset({"tests", "__pycache__", "include"})
PRUNED_SUFFIXES = (".pyi", ".h", ".c", ".cpp", ".pyx", ".pxd", ".pxi", ".md", ".rst")
DEFAULT_LIMIT_MIB = 150


class LayerError(Exception):
    """The layer is not what a deployment may ship (wrong architecture, over the size limit)."""


# --------------------------------------------------------------------------------------------------
# ELF
# --------------------------------------------------------------------------------------------------


def elf_machine(path: Path) -> int | None:
    """The ELF header's e_machine of ``path``, or None when it is no ELF file."""
    with path.open("rb") as fh:
        head = fh.read(20)
    if len(head) < 20 or head[:4] != ELF_MAGIC:
        return None
    order: Literal["little", "big"] = "little" if head[5] == 1 else "big"  # EI_DATA: 1 = little-endian
    return int.from_bytes(head[18:20], order)


def files(root: Path) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath, name)
            if path.is_file() and not path.is_symlink():
                yield path


def foreign_objects(root: Path, machine: int = EM_AARCH64) -> list[tuple[Path, str]]:
    """Every ELF file under ``root`` built for another machine than ``machine``, with the machine it is for."""
    found = []
    for path in files(root):
        got = elf_machine(path)
        if got is not None and got != machine:
            found.append((path, MACHINES.get(got, f"e_machine {got}")))
    return sorted(found)


def strip_tool(arch: str = "aarch64") -> str | None:
    """A strip that handles ``arch``'s objects: the host's on that machine, else the cross binutils'."""
    if os.uname().machine == arch:
        return shutil.which("strip")
    return shutil.which(f"{arch.replace('_', '-')}-linux-gnu-strip")


def has_symtab(path: Path) -> bool:
    """Whether the ELF file at ``path`` still carries a symbol table (SHT_SYMTAB): strip has something to drop."""
    data = path.read_bytes()
    order: Literal["little", "big"] = "little" if data[5] == 1 else "big"
    wide = data[4] == 2  # EI_CLASS: 2 = 64-bit

    def num(at: int, size: int) -> int:
        return int.from_bytes(data[at : at + size], order)

    shoff, shentsize, shnum = (
        (num(0x28, 8), num(0x3A, 2), num(0x3C, 2)) if wide else (num(0x20, 4), num(0x2E, 2), num(0x30, 2))
    )
    return any(num(shoff + i * shentsize + 4, 4) == SHT_SYMTAB for i in range(shnum) if shoff)


def strippable(path: Path) -> bool:
    """An ELF file with a symbol table, outside the ``<dist>.libs`` folders: auditwheel vendors those libraries
    rewritten by patchelf, and strip breaks such a file (measured: numpy's OpenBLAS then fails to load with "ELF load
    command address/offset not page-aligned")."""
    if any(part.endswith(".libs") for part in path.parts):
        return False
    return elf_machine(path) is not None and has_symtab(path)


def strip_objects(root: Path, tool: str) -> int:
    """``strip --strip-unneeded`` every strippable ELF file under ``root``; returns the bytes saved."""
    saved = 0
    for path in files(root):
        if not strippable(path):
            continue
        before = path.stat().st_size
        subprocess.run([tool, "--strip-unneeded", str(path)], check=True)
        saved += before - path.stat().st_size
    return saved


# --------------------------------------------------------------------------------------------------
# Pruning
# --------------------------------------------------------------------------------------------------


def prune(site: Path, keep: Iterable[str] = ("agentmate",)) -> int:
    """Remove what no function imports from the third-party packages in ``site``; returns the bytes removed.

    Directories named tests, __pycache__ (the build precompiles for 3.12 afterwards) and include (C headers), the
    console scripts pip put in bin/, and C sources, headers, stubs and docs files. The packages named in ``keep``
    and every ``*.dist-info`` (metadata and licences) are left whole."""
    kept = set(keep)
    removed = 0
    bin_dir = site / "bin"
    if bin_dir.is_dir():
        removed += tree_bytes(bin_dir)
        shutil.rmtree(bin_dir)
    for top in sorted(site.iterdir()):
        if top.name in kept or top.name.endswith(".dist-info") or not top.is_dir():
            continue
        for dirpath, dirs, names in os.walk(top, topdown=True):
            for name in [d for d in dirs if d in PRUNED_DIRS]:
                dirs.remove(name)
                removed += tree_bytes(Path(dirpath, name))
                shutil.rmtree(Path(dirpath, name))
            for name in names:
                path = Path(dirpath, name)
                if name.endswith(PRUNED_SUFFIXES) and path.is_file():
                    removed += path.stat().st_size
                    path.unlink()
    return removed


def tree_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in files(root))


def copy_package(dest: Path) -> None:
    """shared/agentmate into ``dest``/agentmate, without the offline model and without bytecode."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        rel = Path(directory).relative_to(PACKAGE).as_posix()
        skip = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
        skip |= {n for n in names if f"{rel}/{n}".lstrip("./") in PACKAGE_EXCLUDES}
        return skip

    shutil.copytree(PACKAGE, dest / "agentmate", ignore=ignore)


# --------------------------------------------------------------------------------------------------
# Sizes
# --------------------------------------------------------------------------------------------------


def distribution_sizes(site: Path) -> dict[str, int]:
    """Bytes per distribution: each file counts for the wheel whose RECORD names its top-level entry (so numpy.libs
    and the precompiled bytecode count as numpy's); a top-level entry no RECORD names counts under its own name."""
    owner: dict[str, str] = {}
    for record in site.glob("*.dist-info/RECORD"):
        dist = record.parent.name.split("-")[0]
        for line in record.read_text(encoding="utf-8").splitlines():
            top = line.split(",")[0].split("/")[0]
            if top and not top.startswith(".."):
                owner.setdefault(top, dist)
    sizes: dict[str, int] = {}
    for path in files(site):
        top = path.relative_to(site).parts[0]
        dist = owner.get(top, top)
        sizes[dist] = sizes.get(dist, 0) + path.stat().st_size
    return sizes


def mib(n: int) -> str:
    return f"{n / 1048576:.1f}"


def require_arch(root: Path, arch: str) -> None:
    foreign = foreign_objects(root, ARCHES[arch])
    if foreign:
        shown = ", ".join(f"{p.relative_to(root)} ({m})" for p, m in foreign[:5])
        raise LayerError(f"{len(foreign)} shared objects in the layer are not {arch}: {shown}")


def check(layer: Path, limit_mib: int = DEFAULT_LIMIT_MIB, top: int = 12, arch: str = "aarch64") -> list[str]:
    """The CI gate's report lines; raises LayerError when an object is foreign or the layer is over the limit."""
    require_arch(layer, arch)
    total = tree_bytes(layer)
    site = layer / "python"
    sizes = distribution_sizes(site if site.is_dir() else layer)
    lines = [
        f"layer: {mib(total)} MiB unzipped ({total} bytes), limit {limit_mib} MiB; largest distributions:"
    ]
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"  {mib(size):>6} MiB  {name}")
    if total > limit_mib * 1048576:
        raise LayerError("\n".join([*lines, f"the layer is {mib(total)} MiB unzipped, over {limit_mib} MiB"]))
    return lines


# --------------------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------------------


def pip_install_command(target: Path, arch: str = "aarch64") -> list[str]:
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    command += ["--target", str(target), "--only-binary=:all:", "--no-compile", "--upgrade"]
    command += ["--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for platform in platforms(arch):
        command += ["--platform", platform]
    return [*command, "-r", str(REQUIREMENTS)]


def build(artifacts: Path, arch: str = "aarch64") -> None:
    site = artifacts / "python"
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    subprocess.run(pip_install_command(site, arch), check=True)
    copy_package(site)
    removed = prune(site)
    print(
        f"layer: pruned {mib(removed)} MiB (tests, headers, sources, stubs, docs, bytecode)", file=sys.stderr
    )
    tool = strip_tool(arch)
    if tool is None:
        print(
            f"WARNING: no strip for {arch} objects (apt-get install binutils-aarch64-linux-gnu): not stripped",
            file=sys.stderr,
        )
    else:
        print(f"layer: stripped {mib(strip_objects(site, tool))} MiB with {tool}", file=sys.stderr)
    require_arch(site, arch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    builder = sub.add_parser("build")
    builder.add_argument("artifacts", type=Path)
    checker = sub.add_parser("check")
    for command in (builder, checker):
        command.add_argument("--arch", choices=sorted(ARCHES), default="aarch64")
    checker.add_argument("layer", type=Path)
    checker.add_argument("--limit-mib", type=int, default=DEFAULT_LIMIT_MIB)
    checker.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            build(args.artifacts, args.arch)
        else:
            print("\n".join(check(args.layer, args.limit_mib, args.top, args.arch)))
    except LayerError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
