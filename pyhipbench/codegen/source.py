"""Kernels from CUDA C++ and HIP C++ source, compiled at run time straight into a code object.

``compile_source(target, text, name_expressions=[...], options=[...])``
compiles ``text`` with NVRTC (NVIDIA: cuda-bindings' ``cuda.bindings.nvrtc``
over libnvrtc) or hiprtc (AMD: hip-python's ``hip.hiprtc`` over ROCm's
libhiprtc), the target's family choosing. ``target`` is a ``Device`` (its
processor; from compute capability 9.0 its arch-specific one, ``sm_90a``, as
``compile_for_device`` picks) or a processor name (``"sm_90a"``, ``"gfx942"``).

NVIDIA gets a cubin for the processor, not PTX: a cubin loads on any driver of
the toolkit's major version, while PTX from NVRTC 13.5 (``.version 9.5``)
would need a driver at least as new to compile it. AMD gets an HSACO. Either
loads with ``Device.load_module``. No instruction-cache flush is injected: that
is done at LLVM IR level (``compile_ir``), which runtime compilers do not expose.

``name_expressions`` (``"scale<float>"``, ``"copy"``) are what C++ kernels are
looked up by: the result's ``lowered_names`` maps each to the kernel's mangled
name, which ``Module.kernel`` takes. A compile failure raises ``CodegenError``
quoting the compiler's log; an option the compiler refuses (or an
architecture option, or options that are not a list of strings),
``CompileOptionError``, a ``CodegenError`` that is also a ``BenchError`` (bad
input: the CLI exits 2); a missing compiler library or binding,
``ToolchainError`` saying what to install.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .._codeobject import image as codeobject
from .._device import archs
from .._values import show
from ..errors import BenchError, CodegenError, ToolchainError
from . import CodeObject, nvptx, processor_of, triple_of

if TYPE_CHECKING:
    from .._device.device import Device

# File suffix -> source language, as `pyhipbench run` tells a source file by its name.
SOURCE_LANGUAGES = {".cu": "cuda", ".hip": "hip"}
# Options that choose the processor: it comes from `target`, so one in `options` would contradict it.
_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "--offload-arch")
# A compiler driver's own refusal of an option, as a log line without a source location: NVRTC's
# ("nvrtc: error: unrecognized option -foo found", "... expects an integer value") and clang's, which
# hiprtc runs ("clang: error: unknown argument: '-foo'", "error: invalid value 'c++99' in '-std=c++99'").
_OPTION_REFUSED = re.compile(r"^(?:[A-Za-z][\w+.-]*: )?error: (?:unknown argument|unrecognized (?:command[- ]line )?"
                             r"option|unsupported option|invalid value|.*\bexpects an? \w+ value).*", re.MULTILINE)


class CompileOptionError(BenchError, CodegenError):
    """A compile option NVRTC or hiprtc refuses, or one ``compile_source`` does (an architecture option,
    options that are not a list of strings): bad input, so a ``BenchError`` (the CLI exits 2), and a
    ``CodegenError`` as every other ``compile_source`` refusal."""


@dataclass(frozen=True)
class CompiledSource(CodeObject):
    """A code object compiled from source: ``CodeObject``'s fields (``format`` "cubin" or "hsaco"),
    ``lowered_names`` (each name expression -> the kernel's mangled name) and the compiler's ``log``
    (its warnings; empty when it printed none)."""

    lowered_names: dict[str, str] = field(default_factory=dict)
    log: str = ""


def compile_source(target: Device | str, text: str, *, name_expressions: Sequence[str] = (),
                   options: Sequence[str] = (), name: str | None = None) -> CompiledSource:
    """Compiles CUDA C++ (for an ``sm_*`` target) or HIP C++ (``gfx*``) ``text`` into a loadable code object.

    ``options``: compiler options as the compiler takes them (``-DN=4``, ``-I/path``,
    ``-std=c++17``); the processor option is added from ``target`` and may not be given.
    ``name_expressions``: kernels to look up by C++ name (templates included).
    ``name``: the program's file name in the compiler's messages (default ``source.cu`` /
    ``source.hip``); ``#include "..."`` is resolved against ``-I`` folders.
    """
    processor = _target_processor(target)
    if not isinstance(text, str):
        raise CodegenError(f"source {show(text)}: expected C++ source text (str), got {type(text).__name__}")
    expressions = _strings("name_expressions", name_expressions)
    options = _strings("options", options, CompileOptionError)
    for option in options:
        if option.split("=", 1)[0] in _ARCH_OPTIONS:
            raise CompileOptionError(f"option {option!r}: the processor comes from the target ({processor}); "
                                     "leave the architecture option out")
    if triple_of(processor) == nvptx.TRIPLE:
        return _Nvrtc().compile(text, processor, expressions, options, name or "source.cu")
    return _Hiprtc().compile(text, processor, expressions, options, name or "source.hip")


def _target_processor(target: Any) -> str:
    """The processor to compile for: a processor name as given (checked), or a Device's."""
    if isinstance(target, str):
        processor_of(target)  # CodegenError naming an unknown processor and the known ones
        return target
    arch = getattr(getattr(target, "properties", None), "arch", None)
    if not isinstance(arch, str):
        raise CodegenError(f"target {show(target)}: expected a pyhipbench.Device or a processor name "
                           "such as sm_90a or gfx942")
    if archs.base_arch(arch).startswith("gfx"):
        return arch  # with the device's feature settings (xnack, sramecc), which the code object must match
    # As compile_for_device: the arch-specific target from compute capability 9.0.
    return nvptx.arch_specific(arch) or arch


def _strings(what: str, values: Any, error: type[CodegenError] = CodegenError) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise error(f"{what}={show(values)}: expected a list of strings")
    for value in values:
        if not isinstance(value, str) or not value or "\0" in value:
            raise error(f"{what}: {show(value)} is not a non-empty string without NUL bytes")
    return list(values)


class _RuntimeCompiler:
    """What NVRTC and hiprtc share: create a program, add name expressions, compile with options,
    read the log, the code and the lowered names, destroy the program."""

    compiler: str         # "NVRTC" or "hiprtc"
    arch_option: str      # "--gpu-architecture=" or "--offload-arch="
    success: Any          # the API's success code
    invalid_option: Any   # the API's code for an option it refuses (NVRTC's; hiprtc's clang fails the compile)
    error_string: Callable[[Any], str]

    def check(self, call: str, result: tuple) -> Any:
        """The values after the result code; CodegenError naming the call and the compiler's message."""
        code, *values = result
        if code != self.success:
            raise CodegenError(f"{self.compiler} {call} failed: {self.error_string(code)} ({int(code)})")
        return values[0] if len(values) == 1 else values

    def compile(self, text: str, processor: str, expressions: list[str], options: list[str],
                name: str) -> CompiledSource:
        program = self.check("CreateProgram", self.create(text.encode(), name.encode()))
        try:
            for expression in expressions:
                self.check("AddNameExpression", self.add_name_expression(program, expression.encode()))
            arguments = [f"{self.arch_option}{processor}", *options]
            code, = self.compile_program(program, [a.encode() for a in arguments])
            log = self.log(program)
            refusal = _OPTION_REFUSED.search(log)
            if code != self.success and options and (code == self.invalid_option or refusal):
                said = refusal.group(0) if refusal else log.strip().splitlines()[0] if log.strip() else "no log"
                raise CompileOptionError(
                    f"{self.compiler} refused the options of {name} ({self.error_string(code)}; options: "
                    f"{' '.join(options)}): {said}; expected options {self.compiler} takes, such as -DN=4, "
                    "-I<folder>, -std=c++17")
            if code != self.success:
                raise CodegenError(f"{self.compiler} could not compile {name} for {processor} "
                                   f"({self.error_string(code)}; options: {' '.join(arguments)}):\n{log}")
            lowered = {e: self.lowered_name(program, e) for e in expressions}
            data, image_format, kernels = self.code(program)
        except BaseException:
            try:
                self.destroy(program)
            except CodegenError:
                pass  # the error in flight (the compiler's log) says what went wrong; this would replace it
            raise
        self.destroy(program)
        return CompiledSource(data, image_format, processor, tuple(sorted(kernels)), None, lowered, log)


class _Nvrtc(_RuntimeCompiler):
    compiler, arch_option = "NVRTC", "--gpu-architecture="

    def __init__(self) -> None:
        try:
            from cuda.bindings import nvrtc
        except ImportError:
            raise ToolchainError("compiling CUDA C++ needs NVRTC through cuda-bindings: "
                                 "pip install 'pyhipbench[cuda]' nvidia-cuda-nvrtc") from None
        self.nvrtc = nvrtc
        self.success = nvrtc.nvrtcResult.NVRTC_SUCCESS
        self.invalid_option = nvrtc.nvrtcResult.NVRTC_ERROR_INVALID_OPTION
        try:
            nvrtc.nvrtcVersion()
        except (RuntimeError, OSError) as e:  # cuda-bindings raises these when libnvrtc cannot be loaded
            raise ToolchainError(
                f"cannot load libnvrtc ({e}): pip install nvidia-cuda-nvrtc (CUDA 13, for cuda-bindings 13.x) "
                "or nvidia-cuda-nvrtc-cu12 (for cuda-bindings 12.x), or install the CUDA toolkit") from None

    def error_string(self, code: Any) -> str:
        return _text(self.nvrtc.nvrtcGetErrorString(code)[1])

    def create(self, text: bytes, name: bytes) -> tuple:
        return self.nvrtc.nvrtcCreateProgram(text, name, 0, [], [])

    def add_name_expression(self, program: Any, expression: bytes) -> tuple:
        return self.nvrtc.nvrtcAddNameExpression(program, expression)

    def compile_program(self, program: Any, arguments: list[bytes]) -> tuple:
        return self.nvrtc.nvrtcCompileProgram(program, len(arguments), arguments)

    def log(self, program: Any) -> str:
        size = self.check("GetProgramLogSize", self.nvrtc.nvrtcGetProgramLogSize(program))
        # NVRTC writes into the buffer it is given: a bytearray, never bytes. `b" " * 1` is the
        # interpreter's shared one-byte b" ", which the empty log's NUL would overwrite process-wide.
        log = bytearray(size)
        self.check("GetProgramLog", self.nvrtc.nvrtcGetProgramLog(program, log))
        return _text(log).strip()

    def lowered_name(self, program: Any, expression: str) -> str:
        return _text(self.check(f"GetLoweredName({expression!r})",
                                self.nvrtc.nvrtcGetLoweredName(program, expression.encode())))

    def code(self, program: Any) -> tuple[bytes, str, list[str]]:
        """(the cubin, "cubin", its kernels, read from the PTX NVRTC also wrote)."""
        size = self.check("GetPTXSize", self.nvrtc.nvrtcGetPTXSize(program))
        ptx = bytearray(size)  # written by NVRTC: see log()
        self.check("GetPTX", self.nvrtc.nvrtcGetPTX(program, ptx))
        size = self.check("GetCUBINSize", self.nvrtc.nvrtcGetCUBINSize(program))
        cubin = bytearray(size)
        self.check("GetCUBIN", self.nvrtc.nvrtcGetCUBIN(program, cubin))
        return bytes(cubin), "cubin", list(codeobject.ptx_kernels(_text(ptx)))

    def destroy(self, program: Any) -> None:
        self.check("DestroyProgram", self.nvrtc.nvrtcDestroyProgram(program))


class _Hiprtc(_RuntimeCompiler):
    compiler, arch_option = "hiprtc", "--offload-arch="

    def __init__(self) -> None:
        try:
            from hip import hiprtc
        except ImportError:
            raise ToolchainError('compiling HIP C++ needs hiprtc through hip-python: pip install '
                                 '"hip-python==RELEASE", the release for your ROCm (see the README)') from None
        self.hiprtc = hiprtc
        self.success = hiprtc.hiprtcResult.HIPRTC_SUCCESS
        self.invalid_option = hiprtc.hiprtcResult.HIPRTC_ERROR_INVALID_OPTION
        try:
            hiprtc.hiprtcVersion()
        except RuntimeError as e:  # hip-python raises this when libhiprtc.so cannot be loaded
            raise ToolchainError(f"cannot load ROCm's libhiprtc.so ({e}): install ROCm and put its lib folder "
                                 "on the loader path (export LD_LIBRARY_PATH=/opt/rocm/lib)") from None

    def error_string(self, code: Any) -> str:
        # hip-python 7.x returns (message,), 10.x (HIPRTC_SUCCESS, message).
        message = self.hiprtc.hiprtcGetErrorString(code)[-1]
        return _text(message) if message is not None else f"hiprtc error {int(code)}"

    def create(self, text: bytes, name: bytes) -> tuple:
        return self.hiprtc.hiprtcCreateProgram(text, name, 0, None, None)

    def add_name_expression(self, program: Any, expression: bytes) -> tuple:
        return self.hiprtc.hiprtcAddNameExpression(program, expression)

    def compile_program(self, program: Any, arguments: list[bytes]) -> tuple:
        return self.hiprtc.hiprtcCompileProgram(program, len(arguments), arguments)

    def log(self, program: Any) -> str:
        size = self.check("GetProgramLogSize", self.hiprtc.hiprtcGetProgramLogSize(program))
        log = bytearray(max(size, 1))
        self.check("GetProgramLog", self.hiprtc.hiprtcGetProgramLog(program, log))
        return _text(bytes(log)).strip()

    def lowered_name(self, program: Any, expression: str) -> str:
        return _text(self.check(f"GetLoweredName({expression!r})",
                                self.hiprtc.hiprtcGetLoweredName(program, expression.encode())))

    def code(self, program: Any) -> tuple[bytes, str, list[str]]:
        """(the HSACO, "hsaco", its kernels from its metadata)."""
        size = self.check("GetCodeSize", self.hiprtc.hiprtcGetCodeSize(program))
        code = np.zeros(size, np.uint8)
        self.check("GetCode", self.hiprtc.hiprtcGetCode(program, code))
        data = code.tobytes()
        return data, "hsaco", list(codeobject.hsaco_kernels(data))

    def destroy(self, program: Any) -> None:
        # hiprtcDestroyProgram takes the address of the program handle.
        self.check("DestroyProgram", self.hiprtc.hiprtcDestroyProgram(program.createRef()))


def _text(value: Any) -> str:
    """A C string from a compiler: bytes or hip-python's CStr, up to the first NUL."""
    raw = value if isinstance(value, (bytes, bytearray)) else value.decode().encode()
    return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
