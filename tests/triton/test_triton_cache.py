"""Triton's cache read as triton.compile reads it: the same key, the installation's hash recorded across
processes and computed again when Triton's files change. Real Triton, compiling for sm_90 on the CPU."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install triton): "
                                                "the Triton adapter's tests need it")
from test_compile_ahead import backend_name  # noqa: F401 (a fixture: CUDA)
from triton._C.libtriton import get_cache_invalidating_env_vars
from triton.runtime import cache as triton_cache

import pyhipbench.triton as ht
from pyhipbench.triton import _cache

import triton_kernels as tk


def add_spec(device, block=128):
    x = device.array(np.arange(4096, dtype=np.float32))
    return ht._kernel.specialize(tk.add, [x, x, device.empty_like(x), 4096], ht.target_of(device), BLOCK=block)


def test_the_key_is_the_one_triton_compile_makes(device, fresh_cache):
    spec = add_spec(device)
    source, backend = spec.source(), _cache.backend_of(spec.target)
    options = backend.parse_options(dict(spec.compile_options, **source.parse_options()))
    assert _cache.cache_key(spec) == (
        triton_cache.get_cache_key(source, backend, options, env_vars=get_cache_invalidating_env_vars()),
        f"{source.name}.json")


def test_a_compile_is_found_once_triton_made_it_and_not_before(device, fresh_cache, monkeypatch):
    spec = add_spec(device)
    assert _cache.cached(spec) is None
    made = triton.compile(spec.source(), target=spec.target, options=spec.compile_options)
    found = _cache.cached(spec)
    assert found.hash == made.hash and found.asm["cubin"] == made.asm["cubin"]
    assert _cache.cached(add_spec(device, block=256)) is None  # another specialisation, another entry
    monkeypatch.setattr(triton.knobs.compilation, "always_compile", True)
    assert _cache.cached(spec) is None


def test_the_installation_hash_is_recorded_and_read_back_by_a_later_process(fresh_cache, monkeypatch):
    calls = []
    monkeypatch.setattr(triton_cache, "triton_key", lambda: calls.append(1) or "the installation's hash")
    assert _cache.installation_key() == "the installation's hash" and calls == [1]
    monkeypatch.setattr(_cache, "_key", None)  # a later process: read back, not hashed
    assert _cache.installation_key() == "the installation's hash" and calls == [1]


def test_changed_triton_files_hash_the_installation_again(fresh_cache, monkeypatch):
    monkeypatch.setattr(triton_cache, "triton_key", lambda: "before")
    assert _cache.installation_key() == "before"
    monkeypatch.setattr(_cache, "_key", None)
    fingerprint = _cache._fingerprint()
    monkeypatch.setattr(_cache, "_fingerprint", lambda: hashlib.sha256(fingerprint.encode()).hexdigest())
    monkeypatch.setattr(triton_cache, "triton_key", lambda: "after")
    assert _cache.installation_key() == "after"


def test_the_fingerprint_follows_tritons_files(monkeypatch):
    before = _cache._fingerprint()
    real_stat = _cache.os.stat

    def stat(path, *args, **kwargs):  # libtriton one byte longer, as after an upgrade
        status = real_stat(path, *args, **kwargs)
        if "libtriton" in str(path):
            return type("Status", (), {"st_size": status.st_size + 1, "st_mtime_ns": status.st_mtime_ns})()
        return status
    monkeypatch.setattr(_cache.os, "stat", stat)
    assert _cache._fingerprint() != before


def test_the_fingerprint_covers_every_file_triton_key_reads(monkeypatch):
    import builtins
    read = []
    real_open = builtins.open

    def recording_open(path, *args, **kwargs):
        read.append(str(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", recording_open)
    triton_cache.triton_key.__wrapped__()  # Triton's own hash, past its lru_cache
    monkeypatch.undo()
    assert read and set(map(_cache.os.path.realpath, read)) <= set(map(_cache.os.path.realpath,
                                                                         _cache.triton_files()))


def test_the_first_specialisation_imports_nothing_prepare_triton_early_did_not():
    """The modules Triton's specialiser imports on its first call are the ones imported ahead: in a new
    process, after them, specialising imports no Triton module."""
    import subprocess
    import sys
    script = """
import importlib, sys
import numpy as np
from triton.backends.compiler import GPUTarget
from pyhipbench.triton import _cache, _kernel
import triton_kernels as tk
for module in _cache.SPECIALISER_IMPORTS:
    importlib.import_module(module)
_kernel._binding(tk.add, GPUTarget("cuda", 90, 32))
before = set(sys.modules)
view = _kernel.array_view(np.float32, 4096 * 4)
_kernel.specialize(tk.add, [view, view, view, 4096], GPUTarget("cuda", 90, 32), BLOCK=128)
print(sorted(m for m in set(sys.modules) - before if m.startswith("triton")))
"""
    tests = str(Path(__file__).resolve().parents[1])  # triton_kernels
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**_cache.os.environ, "PYTHONPATH": tests})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_emptied_record_of_the_installation_hash_is_computed_again(fresh_cache, monkeypatch):
    monkeypatch.setattr(triton_cache, "triton_key", lambda: "recorded")
    _cache.installation_key()
    for record in fresh_cache.rglob(_cache._KEY_FILE):
        record.write_text("")  # cut short: never read back as a key
    monkeypatch.setattr(_cache, "_key", None)
    monkeypatch.setattr(triton_cache, "triton_key", lambda: "computed again")
    assert _cache.installation_key() == "computed again"


def test_importing_starts_the_installation_hash_and_the_specialiser_imports():
    """Importing pyhipbench.triton starts the installation's early thread; in a new process it ends
    with the installation key made and the specialiser's modules imported."""
    import subprocess
    import sys
    script = """
import sys
from pyhipbench.triton import _cache
_cache._early[None].join(timeout=120)
print(_cache._key is not None, [m in sys.modules for m in _cache.SPECIALISER_IMPORTS])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True [True, True]"


def test_decorating_for_a_device_hashes_its_backend_ahead(device, monkeypatch):
    """autotune(device=...) starts the early thread for the device's target: the backend's hash, which
    every cache key holds (on NVIDIA a `ptxas --version` run), is made there, not in the first tuning."""
    hashed = []

    class Backend:
        def hash(self):
            hashed.append(True)
            return "hashed"

    monkeypatch.setattr(_cache, "_early", {})
    monkeypatch.setattr(_cache, "backend_of", lambda target: hashed.append(target) or Backend())
    ht.autotune([triton.Config({"BLOCK": 128})], key=["n"], device=device)(tk.add)
    _cache._early[ht.target_of(device)].join(timeout=60)
    assert hashed == [ht.target_of(device), True] and list(_cache._early) == [ht.target_of(device)]


def test_a_failing_backend_hash_ahead_is_left_for_the_tuning_to_meet(monkeypatch, capsys):
    def failing(target):
        raise RuntimeError("no ptxas")

    monkeypatch.setattr(_cache, "_early", {})
    monkeypatch.setattr(_cache, "backend_of", failing)
    thread = _cache.prepare_triton_early(ht._kernel.GPUTarget("cuda", 90, 32))
    thread.join(timeout=60)
    assert not thread.is_alive() and "no ptxas" not in capsys.readouterr().err
