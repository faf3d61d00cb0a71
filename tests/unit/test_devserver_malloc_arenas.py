"""The local runtime caps glibc's malloc arenas (infra/devserver.limit_malloc_arenas): with the default, every new
worker thread that allocates gets an arena of its own, and the soak's heap crept with them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Sixteen threads each allocate a block glibc serves from the calling thread's arena, then the arenas are counted
# from malloc_info's report (one <heap nr=…> per arena).
PROBE = """
import ctypes, ctypes.util, sys, tempfile, threading
from infra.devserver import limit_malloc_arenas
capped = limit_malloc_arenas() if sys.argv[1] == "cap" else False
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
blocks, go = [], threading.Barrier(16)
def work():
    go.wait()
    blocks.append(libc.malloc(4096))
threads = [threading.Thread(target=work) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
path = tempfile.mktemp()
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
print(capped, open(path).read().count("<heap nr="))
"""


def _arenas(mode: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = f"{ROOT / 'shared'}{os.pathsep}{ROOT}"
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's allocator (the Lambda and local hosts)"
)
def test_the_local_runtime_caps_the_threads_malloc_arenas():
    capped, arenas = _arenas("cap")
    _, default = _arenas("default")
    assert capped == "True"
    assert arenas <= 2
    assert default > arenas  # glibc's default gives the threads more: the cap is what holds them


def test_a_malloc_arena_max_in_the_environment_is_left_to_glibc(monkeypatch):
    from infra.devserver import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
