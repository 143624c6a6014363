"""A run's artifact with XLA:GPU's own plan (the xla-gpu strategy) beside ours, for the web tests
of what the pages show of it: XLA's names for its kernels, what the CUDA shown is, and why a
plan XLA refused is missing."""
import importlib.util
from functools import cache

from compiler.stages.pipeline import compile_graph
from tests.explorer.access import SOFTMAX



def _have_plugin() -> bool:
    try:
        return importlib.util.find_spec("jax_plugins.xla_cuda12") is not None
    except ModuleNotFoundError:     # no jax_plugins package at all
        return False


# XLA's deviceless compile needs JAX's CUDA plugin (requirements.txt); without it the xla-gpu
# plan is unavailable and the tests that need one are skipped.
HAVE_PLUGIN = _have_plugin()
NO_PLUGIN = "the xla-gpu strategy needs jax-cuda12-plugin (requirements.txt)"

# What XLA says when it refuses a module, as the plan's `unavailable` keeps it: several lines,
# the last two the line it stopped at and a caret under the column.
REFUSAL = ("XLA:GPU refused the module: JaxRuntimeError: INVALID_ARGUMENT: Syntax error when "
           "trying to parse the text as a HloModule:\n"
           "was parsing 5:8: error: expects '=' in instruction\n"
           "  onnx::MatMul_107 = f32[768,768] parameter(10), "
           'metadata={op_name="onnx::MatMul_107"}\n'
           "       ^")


@cache
def xla_gpu_artifact() -> dict:
    """softmax.hlo on an H100: our xla plan and XLA:GPU's (one kernel: XLA's softmax fusion)."""
    return compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, ["h100"], ["xla", "xla-gpu"])


def refused_artifact(artifact: dict) -> dict:
    """`artifact` (softmax_artifact()) with an xla-gpu plan XLA refused (REFUSAL) on each
    device, as explore stores one."""
    devices = {}
    for name, device in artifact["devices"].items():
        refused = {**device["strategies"]["xla"], "kernels": [], "kernel_count": 0, "kinds": {},
                   "decisions": [], "cost_model": None, "unavailable": REFUSAL,
                   "total": {key: None for key in device["strategies"]["xla"]["total"]}}
        devices[name] = {**device, "strategies": {**device["strategies"], "xla-gpu": refused}}
    return {**artifact, "devices": devices}
