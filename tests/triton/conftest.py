"""The Triton tests' shared fixture: a fresh Triton cache."""
import pytest


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty Triton cache (TRITON_CACHE_DIR: the compile pool starts workers in the new environment), read
    as by a new process (Triton's installation hash not yet read back)."""
    ht = pytest.importorskip("pyhipbench.triton")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    monkeypatch.setattr(ht._cache, "_key", None)
    return tmp_path / "triton-cache"
