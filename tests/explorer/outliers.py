"""Plans with outliers, and plans stored before the cost models were recorded, made from an
artifact the compiler produced, for the pages under test.

The compiler flags a kernel it projects at 20x its speed of light or more
(compiler/cost/outliers.py). No test graph has one (the cost search and the schedules avoid
them), so these helpers flag kernels by editing their entries as the compiler writes them. The
figures are inputs for the pages, never checked against anything."""
import copy


def outlier_reason(kernel: dict, ratio: float) -> str:
    """A reason worded as compiler/cost/outliers.py words a latency-bound kernel's, with the
    kernel's own schedule and launch."""
    sol_us, launch = kernel["sol_us"], kernel.get("projected") or {}
    return (f"projected {sol_us * ratio:.1f} us = {ratio:.0f}x its speed of light "
            f"({sol_us:.1f} us): latency-bound under the {kernel.get('schedule')} schedule: "
            f"{launch.get('grid')} block(s) of {launch.get('block')} threads keep "
            f"{launch.get('sms_used')} SMs busy ({launch.get('waves') or 0:.2f} waves), too "
            f"few loads in flight to hide DRAM latency")


def with_outliers(artifact: dict, device: str, strategy: str, ratios: list[float]) -> dict:
    """A copy of `artifact` whose plan's first kernels project `ratios` times their speed of
    light (one ratio per kernel, in order), latency-bound, flagged with a reason; their
    breakdowns and the plan's total follow."""
    artifact = copy.deepcopy(artifact)
    plan = artifact["devices"][device]["strategies"][strategy]
    for kernel, ratio in zip(plan["kernels"], ratios):
        proj_us = round(kernel["sol_us"] * ratio, 4)
        plan["total"]["proj_us"] += proj_us - kernel["proj_us"]
        kernel.update(proj_us=proj_us, proj_over_sol=ratio, limiter="latency",
                      outlier_reason=outlier_reason(kernel, ratio))
        breakdown = kernel.get("projected")
        if breakdown:
            breakdown.update(projected_us=proj_us, limiter="latency",
                             latency_us=round(proj_us - breakdown.get("launch_us", 0.0), 4))
    return artifact


def before_cost_models(artifact: dict) -> dict:
    """A copy of `artifact` as runs stored before plans named their cost model and kernels
    their ratio to the speed of light and outlier reason."""
    artifact = copy.deepcopy(artifact)
    for device in artifact["devices"].values():
        for plan in device["strategies"].values():
            plan.pop("cost_model", None)
            for kernel in plan["kernels"]:
                kernel.pop("proj_over_sol", None)
                kernel.pop("outlier_reason", None)
    return artifact
