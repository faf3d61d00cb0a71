"""The shared Lambda layer (issue 26 §2): arm64 wheels only, no offline embedding stack, pruned, stripped where
strip is safe, every shared object aarch64, and the CI gate at 150 MiB (infra/layer.py, scripts/build-layer.sh).

The build itself needs PyPI and takes a minute: CI runs it (`scripts/build-layer.sh --layer-only` in .ci/run). These
tests hold the pieces it is made of to their contract on files made here, and the template and dependency lists
to what the layer promises."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from agentmate.core.settings import RetrievalSettings
from agentmate.retrieval import config
from agentmate.retrieval.embedders import EmbeddingError, StaticModelEmbedder
from infra import layer
from tests.contract.test_worker_template import PARAMS, RESOURCES, ROOT

EMBEDDING_STACK = ("model2vec", "tokenizers", "safetensors", "huggingface-hub", "hf-xet")


def elf(machine: int, *, size: int = 64, symtab: bool = False) -> bytes:
    """A minimal little-endian ELF64 file for ``machine``: a header and, with ``symtab``, one SHT_SYMTAB section."""
    header = bytearray(64)
    header[:4] = layer.ELF_MAGIC
    header[4], header[5] = 2, 1  # 64-bit, little-endian
    header[18:20] = machine.to_bytes(2, "little")
    sections = b""
    if symtab:
        header[0x28:0x30] = (64).to_bytes(8, "little")  # e_shoff: right after the header
        header[0x3A:0x3C] = (64).to_bytes(2, "little")  # e_shentsize
        header[0x3C:0x3E] = (2).to_bytes(2, "little")  # e_shnum: the null section and the symbol table
        sections = bytes(64) + bytes(4) + layer.SHT_SYMTAB.to_bytes(4, "little") + bytes(56)
    body = bytes(header) + sections
    return body + bytes(max(0, size - len(body)))


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --------------------------------------------------------------------------------------------------
# Architecture
# --------------------------------------------------------------------------------------------------


def test_the_elf_header_names_the_machine_and_other_files_are_not_objects(tmp_path):
    assert layer.elf_machine(write(tmp_path / "a.so", elf(layer.EM_AARCH64))) == 183
    assert layer.elf_machine(write(tmp_path / "b.so", elf(layer.EM_X86_64))) == 62
    assert layer.elf_machine(write(tmp_path / "c.py", "import os\n")) is None
    assert layer.elf_machine(write(tmp_path / "short", b"\x7fEL")) is None


def test_an_x86_64_object_anywhere_in_the_layer_fails_the_check_and_is_named(tmp_path):
    site = tmp_path / "python"
    write(site / "numpy" / "_core" / "_umath.cpython-312-aarch64-linux-gnu.so", elf(layer.EM_AARCH64))
    write(site / "numpy.libs" / "libopenblas.so.0", elf(layer.EM_AARCH64))
    assert layer.check(tmp_path)[0].startswith("layer: ")
    # a vendored library without a .so name is an object all the same
    write(site / "psycopg_binary.libs" / "libpq-1a2b3c.so.5.17", elf(layer.EM_X86_64))
    with pytest.raises(
        layer.LayerError, match=r"1 shared objects in the layer are not aarch64: .*libpq.*x86_64"
    ):
        layer.check(tmp_path)
    with pytest.raises(layer.LayerError, match="not x86_64"):
        layer.check(tmp_path, arch="x86_64")


def test_the_pip_command_takes_aarch64_cpython_3_12_wheels_only():
    command = layer.pip_install_command(Path("/tmp/target"))
    joined = " ".join(command)
    assert (
        "--only-binary=:all:" in command
        and "--python-version 3.12" in joined
        and "--implementation cp" in joined
    )
    chosen = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert "manylinux2014_aarch64" in chosen and "manylinux_2_28_aarch64" in chosen
    assert "manylinux_2_34_aarch64" in chosen and "manylinux_2_35_aarch64" not in chosen  # AL2023: glibc 2.34
    assert all(p.endswith("_aarch64") for p in chosen)
    assert command[-2:] == ["-r", str(ROOT / "shared" / "requirements.txt")]


# --------------------------------------------------------------------------------------------------
# Pruning, copying, stripping
# --------------------------------------------------------------------------------------------------


def test_pruning_removes_tests_headers_stubs_bytecode_and_scripts_but_not_agentmate_or_metadata(tmp_path):
    site = tmp_path / "python"
    kept = [
        write(site / "numpy" / "__init__.py", "x = 1\n"),
        write(site / "numpy" / "testing" / "__init__.py", "\n"),
        write(site / "numpy-2.4.6.dist-info" / "METADATA", "Name: numpy\n"),
        write(site / "numpy-2.4.6.dist-info" / "licenses" / "LICENSE.md", "BSD\n"),
        write(site / "agentmate" / "system" / "docs" / "guide.md", "# guide\n"),
        write(site / "agentmate" / "tests" / "keep.py", "\n"),
        write(site / "typing_extensions.py", "\n"),
    ]
    gone = [
        write(site / "numpy" / "_core" / "tests" / "test_umath.py", "x" * 1000),
        write(site / "numpy" / "_core" / "include" / "numpy" / "ndarraytypes.h", "x" * 100),
        write(site / "numpy" / "__init__.pyi", "x" * 10),
        write(site / "numpy" / "__pycache__" / "__init__.cpython-311.pyc", b"x" * 10),
        write(site / "yaml" / "_yaml.pyx", "x"),
        write(site / "dulwich" / "README.md", "x"),
        write(site / "bin" / "dulwich", "#!/usr/bin/env python\n"),
    ]
    removed = layer.prune(site)
    assert [p for p in kept if not p.exists()] == []
    assert [p for p in gone if p.exists()] == []
    assert removed == sum(len(x) for x in ["x" * 1000, "x" * 100, "x" * 10, "x" * 10, "x", "x"]) + len(
        "#!/usr/bin/env python\n"
    )


def test_the_package_goes_in_without_the_offline_model_and_without_bytecode(tmp_path):
    layer.copy_package(tmp_path)
    package = tmp_path / "agentmate"
    assert (package / "retrieval" / "embedders.py").is_file()
    assert not (package / "retrieval" / "models").exists()
    assert any((package / "system" / "docs").glob("*.md"))  # package data the functions serve
    assert any((package / "auth" / "oauth" / "templates").glob("*.html"))
    assert not list(package.rglob("__pycache__")) and not list(package.rglob("*.pyc"))
    assert (
        ROOT / "shared" / "agentmate" / "retrieval" / "models" / "minilm-static-256"
    ).is_dir()  # still local


def test_only_objects_with_a_symbol_table_outside_the_vendored_libs_are_stripped(tmp_path):
    site = tmp_path / "python"
    extension = write(site / "yaml" / "_yaml.so", elf(layer.EM_AARCH64, symtab=True))
    stripped = write(site / "grpc" / "cygrpc.so", elf(layer.EM_AARCH64))
    vendored = write(site / "numpy.libs" / "libscipy_openblas.so", elf(layer.EM_AARCH64, symtab=True))
    script = write(site / "yaml" / "__init__.py", "\n")
    assert layer.has_symtab(extension) and not layer.has_symtab(stripped)
    assert [layer.strippable(p) for p in (extension, stripped, vendored, script)] == [
        True,
        False,
        False,
        False,
    ]


@pytest.mark.skipif(shutil.which("strip") is None, reason="needs binutils' strip")
def test_stripping_a_real_object_keeps_it_loadable_and_smaller(tmp_path):
    source = tmp_path / "mod.c"
    source.write_text("int answer(void) { return 42; }\nstatic int unused_helper(int x) { return x + 1; }\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler to make an object")
    obj = tmp_path / "python" / "pkg" / "mod.so"
    obj.parent.mkdir(parents=True)
    subprocess.run([cc, "-g", "-shared", "-fPIC", "-o", str(obj), str(source)], check=True)
    before = obj.stat().st_size
    assert layer.strippable(obj)
    saved = layer.strip_objects(tmp_path / "python", shutil.which("strip") or "strip")
    assert saved == before - obj.stat().st_size > 0 and not layer.has_symtab(obj)
    import ctypes

    assert ctypes.CDLL(str(obj)).answer() == 42


# --------------------------------------------------------------------------------------------------
# Sizes and the gate
# --------------------------------------------------------------------------------------------------


def test_sizes_count_per_distribution_and_the_gate_fails_above_the_limit_printing_the_largest(tmp_path):
    site = tmp_path / "python"
    write(site / "numpy" / "__init__.py", b"n" * 600_000)
    write(site / "numpy.libs" / "libopenblas.so", b"o" * 500_000)
    write(site / "numpy" / "__pycache__" / "__init__.cpython-312.pyc", b"p" * 100_000)
    record = (
        "numpy/__init__.py,sha256=x,1\nnumpy.libs/libopenblas.so,sha256=y,2\nnumpy-2.4.6.dist-info/RECORD,,\n"
    )
    write(site / "numpy-2.4.6.dist-info" / "RECORD", record)
    write(site / "agentmate" / "__init__.py", b"a" * 300_000)
    sizes = layer.distribution_sizes(site)
    assert sizes == {"numpy": 1_200_000 + len(record), "agentmate": 300_000}
    lines = layer.check(tmp_path, limit_mib=2)
    assert "limit 2 MiB" in lines[0] and lines[1].split() == ["1.1", "MiB", "numpy"]
    with pytest.raises(layer.LayerError, match=r"(?s)numpy.*over 1 MiB"):
        layer.check(tmp_path, limit_mib=1)
    cli = [sys.executable, str(ROOT / "infra" / "layer.py"), "check", str(tmp_path), "--limit-mib", "1"]
    run = subprocess.run(cli, capture_output=True, text=True)
    assert run.returncode == 1 and "over 1 MiB" in run.stderr and "numpy" in run.stderr


def test_ci_builds_the_layer_and_the_build_gates_it_at_150_mib():
    assert "bash scripts/build-layer.sh --layer-only" in (ROOT / ".ci" / "run").read_text()
    script = (ROOT / "scripts" / "build-layer.sh").read_text()
    assert "LAYER_LIMIT_MIB=${LAYER_LIMIT_MIB:-150}" in script
    assert 'infra/layer.py" check "$BUILD_DIR/$LAYER_ID" --limit-mib "$LAYER_LIMIT_MIB"' in script
    assert layer.DEFAULT_LIMIT_MIB == 150


# --------------------------------------------------------------------------------------------------
# The template and the dependency lists
# --------------------------------------------------------------------------------------------------


def test_the_layer_resource_is_built_by_the_makefile_for_arm64():
    shared = RESOURCES["SharedLayer"]
    assert shared["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": "arm64"}
    assert shared["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert shared["Properties"]["ContentUri"] == "shared/"
    makefile = (ROOT / "shared" / "Makefile").read_text()
    assert "build-SharedLayer:" in makefile and 'infra/layer.py" build "$(ARTIFACTS_DIR)"' in makefile


def test_a_deployment_must_name_its_embedding_endpoint():
    param = PARAMS["EmbeddingBaseUrl"]
    assert "Default" not in param  # required: CloudFormation refuses a stack without it
    pattern = re.compile(param["AllowedPattern"])
    assert pattern.match("https://dashscope.example/compatible-mode/v1")
    assert (
        not pattern.match("") and not pattern.match("dashscope.example") and not pattern.match("https://a b")
    )


def test_the_offline_embedding_stack_is_the_local_extra_not_the_layer_s():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [re.split(r"[<>=\[ ]", d)[0].lower() for d in pyproject["project"]["dependencies"]]
    local = [
        re.split(r"[<>=\[ ]", d)[0].lower() for d in pyproject["project"]["optional-dependencies"]["local"]
    ]
    assert "model2vec" in local and "model2vec" not in names
    requirements = (ROOT / "shared" / "requirements.txt").read_text().lower()
    pinned = {line.split("==")[0] for line in requirements.splitlines() if "==" in line}
    assert pinned.isdisjoint(EMBEDDING_STACK)
    assert '".[dev,local]"' in (ROOT / "scripts" / "setup.sh").read_text()


# --------------------------------------------------------------------------------------------------
# The code: a deployment without an endpoint, a machine without the local extra
# --------------------------------------------------------------------------------------------------


def test_prod_without_an_embedding_endpoint_fails_naming_the_setting():
    with pytest.raises(EmbeddingError, match="EMBEDDING_BASE_URL is not set"):
        config.build_embedder(RetrievalSettings(agentmate_env="prod"))
    with pytest.raises(EmbeddingError, match="EMBEDDING_BASE_URL"):
        config.build_embedder(RetrievalSettings(agentmate_env="prod", embedding_offline="hashing"))
    endpoint = config.build_embedder(
        RetrievalSettings(
            agentmate_env="prod", embedding_base_url="http://127.0.0.1:9/v1", embedding_dimensions=8
        )
    )
    assert endpoint.dimensions == 8


def test_without_the_local_extra_the_offline_embedder_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "model2vec", None)  # as on a machine without it: imports fail
    with pytest.raises(EmbeddingError, match=r"agentmate\[local\].*EMBEDDING_BASE_URL"):
        StaticModelEmbedder()
    with pytest.raises(EmbeddingError, match="model2vec"):
        config.build_embedder(RetrievalSettings(agentmate_env="dev"))
