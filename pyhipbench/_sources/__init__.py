"""Kernel sources: what a sweep candidate, or `pyhipbench run`'s input, is compiled from, as a registry of
kinds; and the chain schema both take.

    source.py       Source, the interface of a kind; SOURCE_KINDS, the registry (source_from_json)
    code.py         what a compile takes and gives: CompileTarget, Code, CompiledLaunch
    content.py      a source's content from its JSON: a file, text or base64
    code_object.py  CodeObjectSource: a code object, loaded as is
    llvm_ir.py      IRSource: LLVM IR, compiled by pyhipbench.codegen
    cpp.py          CudaSource, HipSource: C++ compiled by NVRTC / hiprtc
    chain.py        the chain schema: LaunchSpec, "module", checked_chain

Importing the package registers its kinds. Triton's kind ("triton", TritonSource) is
pyhipbench.triton's (pyhipbench/triton/_source.py), registered when first named.
"""
from .code import Code, CompiledLaunch, CompileTarget
from .source import SOURCE_KINDS, Source, register_source_kind, source_from_json

# isort: off
# The kinds register as they are imported, so in the order messages list them.
from .code_object import CodeObjectSource
from .llvm_ir import IRSource
from .cpp import CudaSource, HipSource
# isort: on

__all__ = ["Source", "SOURCE_KINDS", "register_source_kind", "source_from_json", "Code", "CompiledLaunch",
           "CompileTarget", "CodeObjectSource", "IRSource", "CudaSource", "HipSource"]
