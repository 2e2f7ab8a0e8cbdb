"""Kernel -> generated C++/CUDA: ``extract_ir``, ``extract_many``, and discovery in existing code."""

from jit.code.extraction.ir_extractor import ExtractionError, FunctionIR, KernelIR, extract_ir, extract_many

__all__ = ["ExtractionError", "FunctionIR", "KernelIR", "extract_ir", "extract_many"]
