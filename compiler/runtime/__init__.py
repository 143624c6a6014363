"""Running generated kernels: the CPU emulator (emulate.py, cuda_emu.h) for tests without a GPU."""

from compiler.runtime.emulate import EmulatedModule, EmulationError, compile_for_emulation

__all__ = ["EmulatedModule", "EmulationError", "compile_for_emulation"]
