"""benchmarks/gpu_stack.py, the app's own measurement path in one command, rehearsed on the CPU as
CI runs it: a real Redis, the real compile and gpu Celery workers and gunicorn (the stack
`make run` starts), a graph uploaded through the API, a measurement asked for through it and
taken by the gpu worker in its emulated mode. The worker checks every kernel on the CPU
emulator against the reference interpreter; no time may appear anywhere."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.stages.measure import EMULATED, EMULATOR

REPO_ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = REPO_ROOT / "tests" / "data" / "hlo" / "softmax.hlo"

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def stack_out(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed; `make system-deps` installs it")
    out = tmp_path_factory.mktemp("gpu-stack")
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")}
    done = subprocess.run(
        [sys.executable, "benchmarks/gpu_stack.py", "--out", str(out), "--device", "h100",
         "--graph", str(SOFTMAX), "--emulated"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=850, check=False)
    return out, done


def test_the_emulated_gpu_worker_takes_the_measurement_the_api_asked_for(stack_out):
    out, done = stack_out
    logs = "\n".join(path.read_text(errors="replace")[-3000:]
                     for path in sorted((out / "logs").glob("*.log")))
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{logs}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["measurement"]["status"] == "done"
    assert summary["measurement"]["gpu"] == EMULATOR
    assert {"run.html", "results.json", "kernel.html", "measurement.json",
            "logs/gpu-worker.log"} <= set(summary["files"])
    assert "ready." in (out / "logs" / "gpu-worker.log").read_text()


def test_no_measured_time_appears_and_every_kernel_was_checked_on_the_emulator(stack_out):
    out, _ = stack_out
    results = json.loads((out / "results.json").read_text())
    assert results["measurement"]["gpu"] == EMULATOR
    plans = results["devices"]["h100"]["strategies"]
    assert plans
    for plan in plans.values():
        assert plan["total"]["measured_us"] is None
        assert plan["total"]["not_measured"] == EMULATED
        for kernel in plan["kernels"]:
            assert kernel["measured_us"] is None and kernel["measured_device_us"] is None
            record = kernel["measured"]
            assert (record["measured_us"], record["timing"]) == (None, None)
            # Softmax's kernels are all generated, so each was run on the emulator and agreed
            # with the reference interpreter.
            assert record["max_abs_error"] is not None and record["mismatches"] == [], record
    summary = json.loads((out / "summary.json").read_text())
    assert summary["measured_times"] == 0 and summary["slowest_kernel"]["by"] == "proj_us"


def test_the_saved_pages_say_not_measured_and_checked_on_the_emulator(stack_out):
    out, _ = stack_out
    run_page = (out / "run.html").read_text()
    assert "kernels checked on the CPU emulator by an emulated GPU worker" in run_page
    assert "nothing was timed, not measured" in run_page
    kernel_page = (out / "kernel.html").read_text()
    slowest = json.loads((out / "summary.json").read_text())["slowest_kernel"]
    assert slowest["kernel"] in kernel_page
    assert "checked on the CPU emulator by an emulated GPU" in kernel_page
    assert EMULATED in kernel_page
