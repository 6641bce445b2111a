"""HipBackend through hip-python, against the fake HIP runtime (tests/fakes/fake_hip_runtime.c).

No AMD GPU is needed: hip-python loads the fake libamdhip64.so, whose device
memory is host memory and whose modules must be real AMDGPU code objects.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

import pytest

from pyhipbench._device.backends import hip as hip_backend
from pyhipbench._device.backends.hip import (
    HIP_PYTHON_RELEASES,
    check_versions,
    decode_hip_version,
    import_hip_python,
    skip_version_check,
)
from pyhipbench.errors import BenchError, NoDeviceError

from fakes.build import FAKES
from fakes.conftest_fixtures import fake_hip_library, require_hip_python, run_with_fake  # noqa: F401 (fixture)

MiB = 1 << 20

hip = require_hip_python()

# The two hip-python lines CI runs these tests against (requirements/test.txt's pin, and .ci/run's second
# step): the HIP version each was generated for, and whether its bindings live in rocm.bindings.
HIP_PYTHON_7 = "7.2.2.562.43"
HIP_PYTHON_10 = "10.0.0.0.1.2"
PINNED_LINES = {HIP_PYTHON_7: (70253211, False), HIP_PYTHON_10: (71526333, True)}
README = Path(__file__).parents[2] / "README.md"

# A kernel and a device function for gfx942: the kernel has a descriptor (add_one.kd), the helper none.
KERNEL_ASM = """
.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
.amdhsa_code_object_version 5
.text
.globl add_one
.p2align 8
.type add_one,@function
add_one:
  s_load_dwordx2 s[0:1], s[0:1], 0x0
  v_lshlrev_b32 v0, 2, v0
  s_waitcnt lgkmcnt(0)
  global_load_dword v1, v0, s[0:1]
  s_waitcnt vmcnt(0)
  v_add_u32 v1, 1, v1
  global_store_dword v0, v1, s[0:1]
  s_endpgm
.Ladd_one_end:
.size add_one, .Ladd_one_end-add_one

.globl helper
.p2align 2
.type helper,@function
helper:
  s_setpc_b64 s[30:31]
.Lhelper_end:
.size helper, .Lhelper_end-helper

.rodata
.p2align 6
.amdhsa_kernel add_one
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_kernarg_size 8
  .amdhsa_next_free_vgpr 2
  .amdhsa_next_free_sgpr 2
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--gfx942
amdhsa.kernels:
  - .name: add_one
    .symbol: add_one.kd
    .kernarg_segment_size: 8
    .kernarg_segment_align: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 2
    .max_flat_workgroup_size: 256
    .args:
      - .name: data
        .offset: 0
        .size: 8
        .value_kind: global_buffer
        .address_space: global
...
.end_amdgpu_metadata
"""


def find_tool(name: str) -> str:
    """An LLVM tool, versioned (Debian's llvm-22 packages) or not; skips, or fails in CI, if absent."""
    for candidate in (f"{name}-22", name):
        path = shutil.which(candidate)
        if path:
            return path
    message = f"{name} (apt-get install llvm-22 lld-22) to build a test code object"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must provide {message}")
    pytest.skip(f"needs {message}")


@pytest.fixture(scope="module")
def hsaco(tmp_path_factory) -> Path:
    """A gfx942 code object holding kernel add_one and device function helper."""
    directory = tmp_path_factory.mktemp("hsaco")
    source, obj, out = directory / "kernel.s", directory / "kernel.o", directory / "kernel.hsaco"
    source.write_text(KERNEL_ASM)
    subprocess.run([find_tool("llvm-mc"), "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx942", "-filetype=obj",
                    str(source), "-o", str(obj)], check=True, capture_output=True)
    subprocess.run([find_tool("ld.lld"), "-shared", str(obj), "-o", str(out)], check=True, capture_output=True)
    return out


def run_hip(library: Path | None, script: str, **env: str) -> dict:
    """Runs `script` in a child process over the fake; by default the fake reports this hip-python's HIP version."""
    return run_with_fake(library, script, env)


def opening_fails(library: Path | None, **env: str) -> dict:
    """HipBackend(0) opened in a child process over `library` with `env`: the failure it raised, its type and
    message (what `failure` reports)."""
    return run_hip(library, """
        try:
            HipBackend(0)
        except Exception as e:
            report(**failure(e))
    """, **env)


# ---- the fake matches hip-python ----

def test_fake_device_struct_has_hip_pythons_size():
    size = hip.hip.hipDeviceProp_t().c_sizeof()
    assert size == 1472, (f"fake_hip_runtime.c mirrors hipDeviceProp_tR0600 (1472 bytes); this hip-python "
                          f"({distribution_version('hip-python')}) has {size}: update the fake")


def test_fake_refuses_a_struct_revision_it_does_not_mirror():
    compiler = shutil.which("gcc") or shutil.which("cc")
    result = subprocess.run([compiler, "-fsyntax-only", "-DFAKE_HIP_DEVICE_PROP=700",
                             str(FAKES / "fake_hip_runtime.c")], capture_output=True, text=True)
    assert result.returncode != 0
    assert "hipDeviceProp_t revision other than R0600" in result.stderr


# ---- device ----

def test_properties_report_the_device_and_infinity_cache(fake_hip_library):
    out = run_hip(fake_hip_library, """
        from dataclasses import asdict
        from pyhipbench._device.archs import base_arch
        p = HipBackend(0).properties()
        report(**asdict(p), base=base_arch(p.arch))
    """)
    assert out["backend"] == "hip" and out["index"] == 0
    assert out["name"] == "AMD Instinct MI300X (fake)"
    assert out["arch"] == "gfx942:sramecc+:xnack-"  # kept as HIP reports it
    assert out["base"] == "gfx942"
    assert out["compute_units"] == 304
    assert out["l2_bytes"] == 4 * MiB  # one XCD's L2, as HIP reports on MI300X
    assert out["llc_bytes"] == 256 * MiB  # the Infinity Cache, from archs' table
    assert out["total_bytes"] == 192 * 10**9
    assert out["max_threads_per_block"] == 1024
    assert out["max_block"] == [1024, 1024, 1024]
    assert out["max_grid"] == [2**31 - 1, 65536, 65536]
    assert out["max_shared_bytes"] == 64 * 1024


def test_device_index_out_of_range_names_the_range(fake_hip_library):
    out = run_hip(fake_hip_library, """
        try:
            HipBackend(3)
        except Exception as e:
            report(**failure(e))
    """)
    assert out["type"] == "NoDeviceError"
    assert "index 3" in out["message"] and "0..0" in out["message"]


@pytest.mark.parametrize("env, call", [({"FAKE_HIP_DEVICE_COUNT": "0"}, "hipGetDeviceCount"),
                                       ({"FAKE_HIP_INIT_ERROR": "100"}, "hipInit")])
def test_no_device_is_a_no_device_error(fake_hip_library, env, call):
    out = opening_fails(fake_hip_library, **env)
    assert out["type"] == "NoDeviceError"
    assert f"HIP found no GPU ({call}: no device)" in out["message"]
    assert "rocm-smi" in out["message"]


def test_other_init_failures_are_driver_errors(fake_hip_library):
    out = opening_fails(fake_hip_library, FAKE_HIP_INIT_ERROR="1")
    assert out["type"] == "DriverError"
    assert out["call"] == "hipInit" and out["code"] == 1


def test_missing_hip_python_says_how_to_install_it(fake_hip_library):
    out = run_hip(fake_hip_library, """
        sys.modules["hip"] = None  # makes `import hip` fail as if hip-python were not installed
        try:
            HipBackend(0)
        except Exception as e:
            report(**failure(e))
    """)
    assert out["type"] == "BindingsMissing"  # a NoDeviceError that names the package
    assert 'pip install "hip-python==RELEASE", the release for your ROCm' in out["message"]
    assert "ROCm 7.2: 7.2.2.562.43" in out["message"] and "ROCm 10.0: 10.0.0.0.1.2" in out["message"]


def test_missing_runtime_says_what_was_tried_and_how_to_fix(tmp_path):
    missing = tmp_path / "libamdhip64.so"
    out = opening_fails(None, PYHIPBENCH_HIP_LIBRARY=str(missing))
    assert out["type"] == "NoDeviceError"
    assert str(missing) in out["message"]
    assert "ROCm" in out["message"] and "LD_LIBRARY_PATH" in out["message"]


def test_a_truncated_runtime_is_refused_before_hip_python_loads_it(fake_hip_library, tmp_path):
    """dlopen of a truncated library dies of SIGBUS: the core checks the file first, and names it."""
    truncated = tmp_path / "libamdhip64.so"
    truncated.write_bytes(fake_hip_library.read_bytes()[:4096])
    out = opening_fails(None, PYHIPBENCH_HIP_LIBRARY=str(truncated))
    assert out["type"] == "NoDeviceError"
    assert out["message"].startswith(f"cannot load the HIP runtime library '{truncated}': the file is truncated or corrupt (4096 "
                                     "bytes, its segments end at byte ")


# ---- version pairing ----

def pinned_line() -> tuple[str, int, bool]:
    """The installed hip-python's release, generated-for HIP version and line; skips for an unpinned release."""
    release = distribution_version("hip-python")
    if release not in PINNED_LINES:
        pytest.skip(f"hip-python {release} is neither of the pinned {', '.join(PINNED_LINES)}")
    return (release, *PINNED_LINES[release])


def test_installed_line_is_recognised():
    release, generated_for, rocm_bindings = pinned_line()
    bindings = import_hip_python()
    assert (bindings.release, bindings.generated_for, bindings.rocm_bindings) == (release, generated_for,
                                                                                   rocm_bindings)
    assert bindings.hip is hip.hip


def test_hip_python_importable_but_not_installed_is_named_by_its_folder(monkeypatch):
    def not_installed(name):
        raise PackageNotFoundError(name)

    monkeypatch.setattr(hip_backend, "distribution_version", not_installed)
    assert import_hip_python().release == f"(uninstalled, at {os.path.dirname(hip.__file__)})"


def test_fake_reports_the_installed_hip_pythons_version(fake_hip_library):
    out = run_hip(fake_hip_library, """
        from hip import hip
        report(version=hip.hipRuntimeGetVersion()[1])
    """)
    assert out["version"] == import_hip_python().generated_for


def test_runtime_of_the_generated_for_hip_is_accepted(fake_hip_library):
    # hip-python 10.0 with HIP 7.15 (ROCm 10.0) was refused: its package version was compared with HIP's.
    release, generated_for, _ = pinned_line()
    major, minor, _ = decode_hip_version(generated_for)
    other_patch = major * 10_000_000 + minor * 100_000 + 1
    out = run_hip(fake_hip_library, "report(name=HipBackend(0).properties().name)",
                  FAKE_HIP_RUNTIME_VERSION=str(other_patch))
    assert out == {"name": "AMD Instinct MI300X (fake)"}, release


def test_runtime_of_the_other_line_is_refused_with_its_release(fake_hip_library):
    release, generated_for, rocm_bindings = pinned_line()
    other = HIP_PYTHON_7 if rocm_bindings else HIP_PYTHON_10
    other_runtime = PINNED_LINES[other][0]
    out = opening_fails(fake_hip_library, FAKE_HIP_RUNTIME_VERSION=str(other_runtime))
    major, minor, _ = decode_hip_version(generated_for)
    other_major, other_minor, other_patch = decode_hip_version(other_runtime)
    assert out["type"] == "NoDeviceError"
    assert f"hip-python {release} was generated for HIP {major}.{minor}," in out["message"]
    assert f"the HIP runtime is {other_major}.{other_minor}.{other_patch}" in out["message"]
    assert f'Fix: pip install "hip-python=={other}"' in out["message"]


@pytest.mark.parametrize("release, generated_for, runtime, fix", [
    (HIP_PYTHON_7, 70253211, 71526333, 'pip install "hip-python==10.0.0.0.1.2" (the release for ROCm 10.0, HIP 7.15)'),
    (HIP_PYTHON_10, 71526333, 70253211, 'pip install "hip-python==7.2.2.562.43" (the release for ROCm 7.2, HIP 7.2)'),
    (HIP_PYTHON_10, 71526333, 60443483, 'pip install "hip-python==6.4.4.555.40" (the release for ROCm 6.4, HIP 6.4)'),
])
def test_mismatch_names_both_versions_and_the_release_that_fits(release, generated_for, runtime, fix):
    major, minor, patch = decode_hip_version(runtime)
    with pytest.raises(NoDeviceError) as caught:
        check_versions(release, generated_for, runtime)
    message = str(caught.value)
    bindings_hip = ".".join(map(str, decode_hip_version(generated_for)[:2]))
    assert f"hip-python {release} was generated for HIP {bindings_hip}, but the HIP runtime is " \
           f"{major}.{minor}.{patch} (hipRuntimeGetVersion {runtime})" in message
    assert f"Fix: {fix}, or set PYHIPBENCH_SKIP_HIP_VERSION_CHECK=1" in message
    assert "~=" not in message  # HIP's version is not hip-python's: no "hip-python~=7.15.0"


def test_mismatch_with_an_unknown_hip_says_none_is_known():
    with pytest.raises(NoDeviceError) as caught:
        check_versions(HIP_PYTHON_10, 71526333, 71612345)
    message = str(caught.value)
    assert "the HIP runtime is 7.16.12345" in message
    assert "install the hip-python release generated for HIP 7.16" in message
    assert "6.2, 6.3, 6.4, 7.0, 7.1, 7.2, 7.15" in message and "pip index versions hip-python" in message
    assert "pip install" not in message


def test_check_versions_compares_major_and_minor_only():
    check_versions(HIP_PYTHON_7, 70253211, 70200000)
    check_versions(HIP_PYTHON_10, 71526333, 71599999)


def test_readme_table_lists_every_known_release():
    readme = README.read_text()
    for (major, minor), (release, rocm) in HIP_PYTHON_RELEASES.items():
        assert f"| {rocm} | {major}.{minor} | `{release}` |" in readme, release


@pytest.mark.parametrize("skip", ["1", "yes", "TRUE", "on"])
def test_version_check_can_be_skipped(fake_hip_library, skip):
    out = run_hip(fake_hip_library, "report(arch=HipBackend(0).properties().arch)",
                  FAKE_HIP_RUNTIME_VERSION="90300000", PYHIPBENCH_SKIP_HIP_VERSION_CHECK=skip)
    assert out["arch"] == "gfx942:sramecc+:xnack-"


@pytest.mark.parametrize("value, skipped", [("", False), ("0", False), ("no", False), ("Off", False),
                                            ("yes", True), ("1", True)])
def test_the_skip_variable_reads_as_people_write_a_switch(monkeypatch, value, skipped):
    monkeypatch.setenv("PYHIPBENCH_SKIP_HIP_VERSION_CHECK", value)
    assert skip_version_check() is skipped


def test_a_skip_variable_that_is_no_switch_is_refused_naming_it(monkeypatch):
    monkeypatch.setenv("PYHIPBENCH_SKIP_HIP_VERSION_CHECK", "maybe")
    with pytest.raises(BenchError, match=r"^PYHIPBENCH_SKIP_HIP_VERSION_CHECK='maybe': expected 1 \(skip the "):
        skip_version_check()


def test_decode_hip_version():
    assert decode_hip_version(70253211) == (7, 2, 53211)
    assert decode_hip_version(71526333) == (7, 15, 26333)
    assert decode_hip_version(60443483) == (6, 4, 43483)


# ---- memory ----

def test_memory_round_trip(fake_hip_library):
    out = run_hip(fake_hip_library, """
        b = HipBackend(0)
        free0, total = b.memory_info()
        data = np.arange(1024, dtype=np.float32)
        first, second = b.allocate(data.nbytes), b.allocate(data.nbytes)
        free1 = b.memory_info()[0]
        b.copy_to_device(second, data)
        back = np.zeros_like(data)
        b.copy_to_host(back, second)
        b.synchronize()
        b.free(first)
        b.free(second)
        report(total=total, used=free0 - free1, freed=b.memory_info()[0] == free0,
               equal=bool((back == data).all()))
    """)
    assert out["total"] == 192 * 10**9
    assert out["used"] == 2 * 4096
    assert out["freed"] and out["equal"]


def test_copies_need_contiguous_writable_arrays(fake_hip_library):
    out = run_hip(fake_hip_library, """
        b = HipBackend(0)
        address = b.allocate(64)
        errors = {}
        for label, action in [
            ("strided", lambda: b.copy_to_device(address, np.zeros(32, np.float32)[::2])),
            ("not_array", lambda: b.copy_to_device(address, b"x" * 16)),
            ("read_only", lambda: b.copy_to_host(np.frombuffer(b"x" * 16, np.uint8), address)),
            ("empty", lambda: b.allocate(0)),
        ]:
            try:
                action()
            except Exception as e:
                errors[label] = failure(e)
        report(**errors)
    """)
    assert {out[k]["type"] for k in ("strided", "not_array", "read_only", "empty")} == {"BenchError"}
    assert "contiguous" in out["strided"]["message"]
    assert "bytes" in out["not_array"]["message"]  # names what it got
    assert "read-only" in out["read_only"]["message"]
    assert "got 0" in out["empty"]["message"]


def test_copy_past_an_allocation_is_a_driver_error(fake_hip_library):
    out = run_hip(fake_hip_library, """
        b = HipBackend(0)
        address = b.allocate(16)
        try:
            b.copy_to_device(address, np.zeros(8, np.float32))  # 32 bytes into 16
        except Exception as e:
            report(**failure(e))
    """)
    assert out["type"] == "DriverError"
    assert out["call"] == "hipMemcpyHtoD" and out["code"] == 1


# ---- modules ----

def test_code_object_loads_and_kernels_resolve(fake_hip_library, hsaco):
    out = run_hip(fake_hip_library, f"""
        b = HipBackend(0)
        module = b.load_module(open({str(hsaco)!r}, "rb").read())
        kernel = b.function(module, "add_one")
        errors = {{}}
        for label, name in [("absent", "no_such_kernel"), ("device_function", "helper")]:
            try:
                b.function(module, name)
            except Exception as e:
                errors[label] = failure(e)
        report(module=module, kernel=kernel, again=b.function(module, "add_one"),
               params=b.kernel_params(module, kernel), names=b.kernel_names(module), **errors)
        b.unload_module(module)
    """)
    assert out["module"] != 0 and out["kernel"] != 0
    assert out["again"] == out["kernel"]  # one name, one handle, as HIP
    assert out["params"] is None and out["names"] is None
    for label, name in [("absent", "no_such_kernel"), ("device_function", "helper")]:
        error = out[label]
        assert error["type"] == "DriverError"
        assert error["call"] == "hipModuleGetFunction"
        assert error["code"] == int(hip.hip.hipError_t.hipErrorNotFound)
        assert repr(name) in error["message"]


def test_unloaded_module_is_rejected(fake_hip_library, hsaco):
    out = run_hip(fake_hip_library, f"""
        b = HipBackend(0)
        module = b.load_module(open({str(hsaco)!r}, "rb").read())
        b.unload_module(module)
        try:
            b.unload_module(module)
        except Exception as e:
            report(**failure(e))
    """)
    assert out["type"] == "DriverError" and out["call"] == "hipModuleUnload"


def test_images_that_are_not_amdgpu_code_objects_are_rejected(fake_hip_library):
    # The fake library itself is an ELF, but a host (x86-64) one.
    out = run_hip(fake_hip_library, f"""
        b = HipBackend(0)
        errors = {{}}
        for label, image in [("text", b"not a code object at all"),
                             ("host_elf", open({str(fake_hip_library)!r}, "rb").read())]:
            try:
                b.load_module(image)
            except Exception as e:
                errors[label] = failure(e)
        report(**errors)
    """)
    for label in ("text", "host_elf"):
        assert out[label]["type"] == "DriverError"
        assert out[label]["call"] == "hipModuleLoadData"
        assert out[label]["code"] == int(hip.hip.hipError_t.hipErrorInvalidImage)


# ---- one runtime per process ----

def test_library_from_env_is_the_one_hip_python_uses(fake_hip_library):
    # With PYHIPBENCH_HIP_LIBRARY set and nothing on the loader path, hip-python
    # must open that file: an allocation made through HipBackend shows in the
    # free memory that library reports when opened directly (the same handle
    # the C++ core's dlopen gets).
    out = run_hip(None, f"""
        import ctypes
        b = HipBackend(0)
        b.allocate(1 << 20)
        library = ctypes.CDLL({str(fake_hip_library)!r})
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        library.hipMemGetInfo(ctypes.byref(free), ctypes.byref(total))
        report(used=total.value - free.value)
    """, PYHIPBENCH_HIP_LIBRARY=str(fake_hip_library))
    assert out["used"] == 1 << 20


def test_hip_python_and_the_core_load_one_library_whatever_rocm_path_holds(fake_hip_library, tmp_path):
    # hip-python 10.x looks in $ROCM_PATH/lib before the loader path; the core dlopens libamdhip64.so
    # through the loader path. One process must map one HIP runtime: the core's.
    rocm_lib = tmp_path / "rocm" / "lib"
    rocm_lib.mkdir(parents=True)
    shutil.copy(fake_hip_library, rocm_lib / "libamdhip64.so")
    out = run_hip(fake_hip_library, """
        import pyhipbench as hb
        hb.Device("hip")
        report(mapped=sorted({line.split()[-1] for line in open("/proc/self/maps")
                              if line.rstrip().endswith("/libamdhip64.so")}))
    """, ROCM_PATH=str(tmp_path / "rocm"))
    assert out["mapped"] == [str(fake_hip_library)]


# ---- kernel limits and the shared memory opt-in ----

def test_shared_memory_opt_in_limit_is_the_runtimes(fake_hip_library):
    script = """
        p = HipBackend(0).properties()
        report(default=p.max_shared_bytes, optin=p.max_shared_bytes_optin)
    """
    assert run_hip(fake_hip_library, script) == {"default": 64 * 1024, "optin": 64 * 1024}  # ROCm on MI300X
    assert run_hip(fake_hip_library, script, FAKE_HIP_SHARED_OPTIN="163840") == {"default": 64 * 1024,
                                                                                 "optin": 163840}
    # A runtime that leaves sharedMemPerBlockOptin 0 offers no opt-in: the default is the limit.
    assert run_hip(fake_hip_library, script, FAKE_HIP_SHARED_OPTIN="0") == {"default": 64 * 1024,
                                                                           "optin": 64 * 1024}


def test_kernel_limits_and_dynamic_shared_opt_in(fake_hip_library, hsaco):
    out = run_hip(fake_hip_library, f"""
        from hip import hip
        b = HipBackend(0)
        module = b.load_module(open({str(hsaco)!r}, "rb").read())
        kernel = b.function(module, "add_one")
        limits = b.function_limits(kernel)
        b.set_max_dynamic_shared(kernel, 100000)
        attribute = hip.hipFunction_attribute.HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        err, dynamic = hip.hipFuncGetAttribute(attribute, kernel)
        try:
            b.set_max_dynamic_shared(kernel, 163840)  # + 1024 static: above the opt-in limit
        except Exception as e:
            refused = failure(e)
        report(threads=limits.max_threads_per_block, static=limits.static_shared_bytes, err=int(err),
               dynamic=dynamic, refused=refused)
    """, FAKE_HIP_SHARED_OPTIN="163840", FAKE_HIP_FUNC_MAX_THREADS="256", FAKE_HIP_FUNC_STATIC_SHARED="1024")
    assert (out["threads"], out["static"]) == (256, 1024)
    assert out["err"] == 0 and out["dynamic"] == 100000
    assert out["refused"]["type"] == "DriverError" and out["refused"]["call"] == "hipFuncSetAttribute"
    assert out["refused"]["code"] == int(hip.hip.hipError_t.hipErrorInvalidValue)


def test_kernel_limits_of_an_unloaded_kernel_are_a_driver_error(fake_hip_library, hsaco):
    out = run_hip(fake_hip_library, f"""
        b = HipBackend(0)
        module = b.load_module(open({str(hsaco)!r}, "rb").read())
        kernel = b.function(module, "add_one")
        b.unload_module(module)
        try:
            b.function_limits(kernel)
        except Exception as e:
            report(**failure(e))
    """)
    assert out["type"] == "DriverError" and out["call"] == "hipFuncGetAttribute"
    assert out["code"] == int(hip.hip.hipError_t.hipErrorInvalidDeviceFunction)
    assert "invalid device function" in out["message"]
