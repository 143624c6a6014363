"""Kernels as data, below every stage that makes or reads them: a graph's nodes grouped into
kernels (`grouping`: roles, fusible/leaf/library/plumbing), `FusionPlan` and `Kernel` with
their invariants and the reference execution of a plan (`plan`), the iteration spaces a
kernel's nodes share (`locality`), the kind of kernel a group is and its dominant reduction,
decided once for every strategy and the code generator (`analysis`), the launch shape stitched
kernels are decided for (`stitch_launch`) and made-up inputs for checking one kernel alone
(`inputs`).
"""
