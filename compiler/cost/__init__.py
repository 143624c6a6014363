"""Cost models above the speed of light (compiler/target/sol.py): what a kernel's generated
code does (`workload`, read off its CodeGen plan), the projected time of that on a device
(`projected`, with occupancy, waves and latency; `outliers` says why a kernel is far above its
SOL), the constants fitted to measured times (`calibrate`), the learned model (`learned/`), and
how well any of them ranks plans against measured times (`plan_ranking`: Kendall's tau, the
regret of its pick).
"""
