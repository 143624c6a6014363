"""Measurement results shaped exactly as compiler.stages.measure.measure_graph returns them, built
from the GPU runner's own result classes (there is no GPU here to produce real ones). The timings
are made-up inputs for the pages under test, never figures anything is checked against."""
from compiler.runtime.gpu import KernelRun, PlanRun, Timing

GPU = "NVIDIA H100 80GB HBM3"


def measurement_result(artifact: dict, device: str = "h100", not_measured: set = frozenset(),
                       mismatched: set = frozenset()) -> dict:
    """Every kernel of every plan of `device` timed at (index + 1) µs, except the kernels named
    in `not_measured`; the plans whose kernels all ran get an end-to-end time of their sum."""
    from compiler.codegen.check import Mismatch

    strategies = {}
    for strategy, plan in artifact["devices"][device]["strategies"].items():
        kernels = []
        for index, kernel in enumerate(plan["kernels"]):
            run = KernelRun(kernel["name"], kernel["kind"], kernel.get("function"),
                            nodes=list(kernel["nodes"]))
            if kernel["name"] in not_measured:
                run.not_measured = "not measured: bf16 dots have no CuPy equivalent"
            else:
                run.timing = Timing(tuple([index + 1.0] * 20), 3)
                run.max_abs_error = 1e-7
            if kernel["name"] in mismatched:
                run.mismatches = [Mismatch(node=kernel["nodes"][0], max_abs_error=1.0, where=(0,),
                                           got=1.0, expected=2.0)]
            kernels.append(run)
        plan_run = PlanRun(strategy, GPU, kernels)
        if any(k.timing is None for k in kernels):
            plan_run.not_measured = "not measured: 1 of the kernels did not run"
        else:
            plan_run.end_to_end = Timing(tuple([sum(k.timing.median_us for k in kernels)] * 20),
                                         3)
        strategies[strategy] = plan_run.to_dict()
    eager = Timing(tuple([50.0] * 20), 3)
    return {"gpu": GPU, "arch": "sm_90", "compiler_version": artifact["compiler_version"],
            "inputs": "compiler.kernels.inputs.random_inputs, seed 0",
            "devices": {device: {"matches_gpu": True, "strategies": strategies,
                                 "eager": {"measured_us": eager.median_us,
                                           "timing": eager.to_dict(), "not_measured": None}}}}
