"""Running generated kernels on a GPU: a fusion plan's kernels checked and timed with CuPy
(`gpu`) and the unfused eager baseline (`eager`). The CPU emulator the tests run kernels on
without a GPU is compiler/toolchain/emulate.py.
"""
