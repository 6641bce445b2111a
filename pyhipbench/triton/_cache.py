"""Triton's cache of compiled kernels, read as `triton.compile` reads it, without its per-process cost.

`triton.compile` keys every compile with `triton_key()`, a hash of Triton's
own files (libtriton's hundreds of MB among them): a few tenths of a second,
once in each process, before even a cache hit can be answered. The hash
depends only on those files, so it is recorded in Triton's cache directory
under a fingerprint of them (each file's path, size and modification time)
and read back by later processes while the files are unchanged; any change
(an upgrade, an edited file) computes and records it afresh.

`cached(spec)` then looks a compile up under the very key `triton.compile`
makes (the same parts, joined as Triton joins them; a test compares the two)
and, where the cache holds it, returns Triton's own `CompiledKernel` read from
that entry (`cache_entry(spec)` only finds it). A miss falls
back to `triton.compile`, which computes its key itself: a key built
differently (another Triton release) can only miss, never find another
kernel's entry.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._kernel import Specialized

__all__ = ["installation_key", "prepare_triton_early", "cached", "cache_entry", "cache_key", "backend_of",
           "triton_files"]

_KEY_FILE = "triton_key.txt"
_key: str | None = None  # this process's triton_key(): Triton's lru_cache holds it once per process too
_lock = threading.Lock()
_early: dict[Any, threading.Thread] = {}  # prepare_triton_early's threads, by target (None: the installation's)


def triton_files() -> list[str]:
    """The files triton_key() hashes: Triton's cache.py, the Python modules of its compiler, backends and
    language packages (as pkgutil.walk_packages finds them: a package is a directory with an __init__.py),
    and libtriton."""
    import sysconfig

    import triton
    root = os.path.dirname(os.path.abspath(triton.__file__))
    extension = sysconfig.get_config_var("EXT_SUFFIX").split(".")[-1]
    files = [os.path.join(root, "runtime", "cache.py"), os.path.join(root, "_C", f"libtriton.{extension}")]
    for package in ("compiler", "backends", "language"):
        for directory, subdirectories, names in os.walk(os.path.join(root, package)):
            subdirectories[:] = [d for d in subdirectories
                                 if os.path.exists(os.path.join(directory, d, "__init__.py"))]
            files += [os.path.join(directory, n) for n in names if n.endswith(".py")]
    return sorted(files)


def _fingerprint() -> str:
    """Triton's version and the files triton_key() hashes, by path, size and modification time."""
    import triton
    lines = [triton.__version__]
    for path in triton_files():
        status = os.stat(path)
        lines.append(f"{path} {status.st_size} {status.st_mtime_ns}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def installation_key() -> str:
    """Triton's `triton_key()`: recorded under the fingerprint of Triton's files by an earlier process
    (read back in about a millisecond), else computed now (or by prepare_triton_early's thread) and recorded.
    Once per process, as Triton computes it."""
    global _key
    with _lock:
        if _key is None:
            _key = _recorded_key()
        return _key


def _recorded_key() -> str:
    from triton.runtime.cache import get_cache_manager, triton_key

    fingerprint = _fingerprint()
    manager = get_cache_manager(hashlib.sha256(f"pyhipbench triton_key {fingerprint}".encode()).hexdigest())
    path = manager.get_file(_KEY_FILE)
    if path is not None:
        try:
            with open(path, encoding="utf-8") as f:
                recorded = f.read()
            if recorded:
                return recorded
        except OSError:  # removed meanwhile, or unreadable: computed again
            pass
    key = triton_key()
    manager.put(key, _KEY_FILE, binary=False)
    return key


# What Triton's native specialiser imports on its first call (a tenth of a second or more of imports, for
# tensor-descriptor types); an import Triton has moved is skipped.
SPECIALISER_IMPORTS = ("triton.tools.tensor_descriptor", "triton.experimental.gluon.nvidia.hopper")


def _prepare(target: Any) -> None:
    if target is not None:
        try:  # NVIDIA: runs `ptxas --version`, once per process (a subprocess: the GIL is free meanwhile)
            backend_of(target).hash()
        except Exception:  # noqa: BLE001 - met again, and reported, where the tuning makes its first cache key
            pass
        return
    installation_key()
    for module in SPECIALISER_IMPORTS:
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def prepare_triton_early(target: Any = None) -> threading.Thread:
    """Starts one of Triton's once-per-process costs on a thread of its own (once per process), so that
    a first tuning does not wait for it; returns that thread. With no `target` (when pyhipbench.triton is
    imported, so they run while the caller opens its device and makes its tensors): `installation_key()`
    where no earlier process recorded it (hashing's reads release the GIL) and the modules Triton's
    specialiser imports on its first call. With a `target` (a GPUTarget: autotune(device=...)): the hash of
    its backend, which every cache key holds."""
    thread = threading.Thread(target=_prepare, args=(target,), daemon=True, name="pyhipbench-triton-early")
    if _early.setdefault(target, thread) is thread:  # setdefault is atomic: one thread per target
        thread.start()
    return _early[target]


def cache_key(spec: "Specialized") -> tuple[str, str]:
    """(Triton's cache key for `spec`'s compile, the entry's metadata file name), as triton.compile
    makes them: the installation, the source (the function, its attributes, signature and constants),
    the backend, the parsed options and the cache-invalidating environment variables."""
    from triton._C.libtriton import get_cache_invalidating_env_vars

    source = spec.source()
    backend = backend_of(spec.target)
    options = backend.parse_options(dict(spec.compile_options, **source.parse_options()))
    environment = get_cache_invalidating_env_vars()
    key = f"{installation_key()}-{source.hash()}-{backend.hash()}-{options.hash()}-{sorted(environment.items())}"
    return key, f"{source.name[:150]}.json"


@functools.lru_cache(maxsize=16)
def backend_of(target: Any) -> Any:
    """Triton's compiler backend for `target` (a GPUTarget), made once per target."""
    from triton.compiler.compiler import make_backend
    return make_backend(target)


def cache_entry(spec: "Specialized") -> tuple[str, dict[str, str]] | None:
    """(the digest, the group of files) of `spec`'s entry in Triton's cache (its files are not read), or
    None where the cache lacks it or is bypassed (TRITON_ALWAYS_COMPILE)."""
    from triton import knobs
    from triton.runtime.cache import get_cache_manager

    if knobs.compilation.always_compile:
        return None
    key, metadata = cache_key(spec)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    group = get_cache_manager(digest).get_group(metadata)
    return (digest, group) if group and metadata in group else None


def cached(spec: "Specialized", entry: tuple[str, dict[str, str]] | None = None) -> Any | None:
    """Triton's CompiledKernel for `spec` read from Triton's cache (from `entry`, its `cache_entry`
    found already), or None where the cache lacks it or is bypassed (TRITON_ALWAYS_COMPILE)."""
    from triton.compiler.compiler import CompiledKernel

    entry = cache_entry(spec) if entry is None else entry
    if entry is None:
        return None
    digest, group = entry
    try:
        return CompiledKernel(spec.source(), group, digest)
    except (OSError, ValueError, KeyError):  # an entry removed or cut short meanwhile: compiled afresh
        return None
