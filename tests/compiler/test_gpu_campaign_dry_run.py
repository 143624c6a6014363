"""benchmarks/gpu_campaign.py --dry-run end to end, as CI rehearses the GPU campaign (issue 15):
every step runs on the CPU (emulator checks, SYNTHETIC timings), the outputs are complete and
their figures agree with what the rows they summarise say, and a second run resumes.

Two small modules keep it to well under a minute once nvcc's cache is warm.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_campaign.py"
MODULES = ["softmax", "rms_norm"]
STRATEGIES = ["unfused", "xla", "stitch", "cost"]
STEPS = (["environment", "modules", "copy", "dataset", "train"]
         + [f"{kind}/{m}" for kind in ("plans", "anchors") for m in MODULES]
         + ["calibrate", "ncu"])


def campaign(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out),
                           "--modules", ",".join(MODULES), "--epochs", "1", "--top-k", "2",
                           *extra], capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("campaign")
    return out, campaign(out)


def summary_of(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_the_dry_run_goes_through_every_step_and_writes_its_result(dry_run):
    out, first = dry_run
    assert first.returncode == 0, first.stderr[-3000:]
    assert "COMPLETE" in first.stdout and "INCOMPLETE" not in first.stdout
    for step in STEPS:
        assert (out / f"{step}.json").is_file(), step
    report = (out / "REPORT.md").read_text()
    assert "DRY RUN" in report and "SYNTHETIC" in report
    assert all(f"| {module} |" in report for module in MODULES)


def test_every_strategy_of_every_module_has_its_kernels_checked_and_timed(dry_run):
    out, _ = dry_run
    summary = summary_of(out)
    assert sorted(summary["plans"]) == sorted(MODULES)
    for module, result in summary["plans"].items():
        assert list(result["strategies"]) == STRATEGIES
        assert result["timing"].startswith("SYNTHETIC")
        for strategy, plan in result["strategies"].items():
            assert plan["kernel_count"] == len(plan["kernels"]) > 0
            for row in plan["kernels"]:
                assert row["not_measured"] is None, (module, strategy, row)
                assert row["mismatches"] == 0 and row["max_abs_error"] is not None
                # The synthetic function: 5 samples around 1 to 1.3 times the prediction.
                assert row["runs"] == 5
                assert 0.9 * row["proj_us"] <= row["measured_us"] <= 1.45 * row["proj_us"]
            assert plan["measured_sum_us"] == pytest.approx(
                sum(row["measured_us"] for row in plan["kernels"]))


def test_accuracy_and_speedups_agree_with_an_independent_computation(dry_run):
    out, _ = dry_run
    summary = summary_of(out)
    rows = [row for result in summary["plans"].values()
            for plan in result["strategies"].values() for row in plan["kernels"]]
    apes = [100 * abs(r["proj_us"] - r["measured_us"]) / r["measured_us"] for r in rows]
    projected = summary["accuracy"]["projected"]["kernels"]
    assert projected["count"] == len(rows)
    assert projected["mape"] == pytest.approx(sum(apes) / len(apes))
    small = [a for a, r in zip(apes, rows) if r["measured_us"] < 5]
    assert projected["median_ape_under_5us"] == pytest.approx(statistics.median(small))
    for module, result in summary["plans"].items():
        plans = result["strategies"]
        assert summary["speedups"][module]["xla"] == pytest.approx(
            plans["xla"]["measured_sum_us"] / plans["cost"]["measured_sum_us"])
        best = min(plans.values(), key=lambda p: p["measured_sum_us"])
        assert best["measured_sum_us"] <= plans["cost"]["measured_sum_us"]


def test_every_plan_is_timed_whole_both_ways_and_the_replays_fit_the_graph_gap(dry_run):
    """Each plan run whole back to back and replayed as one CUDA graph (synthetic here: a
    known function of its kernels' projected device work and the graph gap); the calibrate
    step fits the graph gap from the replays with launch.fit_gap, as launch_calibration.py
    does, and the report compares the cost plan's replay with jax.jit."""
    from compiler.target.launch import fit_alone, fit_gap, terms_for

    out, _ = dry_run
    summary = summary_of(out)
    gap = terms_for("h100").graph_gap_us
    replayed = []
    for module, result in summary["plans"].items():
        for strategy, plan in result["strategies"].items():
            assert plan["end_to_end_us"] > 0 and plan["graph_not_measured"] is None
            work = sum(row["device_us"] + gap for row in plan["kernels"])
            # The synthetic function: 1 to 1.3 times the base, +- 2 % noise per sample.
            assert 0.9 * work <= plan["graph_replay_us"] <= 1.45 * work, (module, strategy)
            if plan["kernel_count"] >= 2:
                replayed.append((plan["kernel_count"], plan["measured_sum_us"],
                                 plan["graph_replay_us"]))
    alone, _ = fit_alone([(row["measured_us"], row["device_us"])
                          for result in summary["plans"].values()
                          for plan in result["strategies"].values() for row in plan["kernels"]])
    fitted = summary["calibrate"]["launch"]["graph_gap_us"]
    assert fitted["value"] == pytest.approx(fit_gap(replayed, alone)[0])
    assert fitted["from"] == f"{len(replayed)} plans of generated kernels replayed as CUDA graphs"
    report = (out / "REPORT.md").read_text()
    assert "## Whole plans: back to back in a stream / replayed as one CUDA graph" in report
    assert "- graph_gap_us: " in report


def test_the_anchors_are_rehearsed_or_say_why_not(dry_run):
    out, _ = dry_run
    anchors = summary_of(out)["anchors"]
    for module in MODULES:
        entries = anchors[module]
        assert entries["cupy_eager"]["origin"].startswith("SYNTHETIC")
        assert entries["torch_eager"]["status"] == "rehearsed"
        assert entries["torch_eager"]["where"] == "cpu"
        assert entries["torch_eager"]["max_abs_error"] < 1e-4
        assert entries["torch_compile"]["backend"] == "aot_eager"
        jax = entries["jax"]
        assert jax["status"] in ("skipped", "rehearsed")
        if jax["status"] == "skipped":
            assert "not installed" in jax["note"]
        # A CPU rehearsal is never compared with the plans' (synthetic) times.
        assert summary_of(out)["speedups"][module]["torch_eager"] is None


def test_the_learned_model_calibration_and_ncu_steps_report_their_figures(dry_run):
    out, _ = dry_run
    summary = summary_of(out)
    assert summary["dataset"]["origin"] == "synthetic" and summary["dataset"]["samples"] > 0
    assert Path(summary["train"]["path"]).is_file()
    assert summary["train"]["evaluation"]["program"]["learned"]["count"] > 0
    calibration = summary["calibrate"]
    assert calibration["records"] > 0 and calibration["after"]["mape"] <= \
        calibration["before"]["mape"]
    profiled = summary["ncu"]["kernels"]
    assert summary["ncu"]["origin"].startswith("SYNTHETIC") and profiled
    assert all(0 < k["achieved_occupancy"] <= 1 for k in profiled)


def test_a_second_run_skips_every_step_already_done(dry_run):
    out, _ = dry_run
    second = campaign(out)
    assert second.returncode == 0, second.stderr[-3000:]
    for step in STEPS:
        assert f"skipped  {step.replace('/', ':')} (done)" in second.stdout
    assert "running" not in second.stdout


def test_a_folder_of_other_settings_is_refused(dry_run):
    out, _ = dry_run
    other = campaign(out, "--size", "realistic")
    assert other.returncode == 1
    assert "give another --out" in other.stderr


def test_a_resumed_campaign_with_more_modules_lowers_what_is_missing_and_refits(dry_run,
                                                                                tmp_path):
    """The committed results keep the JSON, not the modules' HLO and inputs nor the cubins: a
    campaign resumed from such a folder with one more module lowers and builds what it needs
    again, measures only the new module, and makes calibrate and ncu again over all three."""
    out, _ = dry_run
    kept = tmp_path / "kept"
    shutil.copytree(out, kept)
    for path in [*(kept / "modules").iterdir(), *(kept / "kernels").rglob("*.cubin")]:
        path.unlink()
    more = ["softmax", "rms_norm", "layer_norm_fwd"]
    resumed = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(kept),
                              "--modules", ",".join(more), "--epochs", "1", "--top-k", "2",
                              "--steps", "plans,anchors,calibrate,ncu"],
                             capture_output=True, text=True, cwd=REPO, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for step in ("plans:softmax", "plans:rms_norm", "anchors:softmax"):
        assert f"skipped  {step} (done)" in resumed.stdout
    for step in ("plans:layer_norm_fwd", "anchors:layer_norm_fwd", "calibrate", "ncu"):
        assert f"running  {step}" in resumed.stdout
    assert (kept / "modules" / "layer_norm_fwd.hlo").is_file()
    assert sorted(json.loads((kept / "calibrate.json").read_text())["modules"]) == sorted(more)
    profiled = {k["module"] for k in json.loads((kept / "ncu.json").read_text())["kernels"]}
    assert profiled == set(more)
    assert (kept / "kernels" / "softmax" / "cost_stitch_regional_0.cubin").is_file()
    # Each run is recorded with what it finished, and the report lists them all.
    runs = json.loads((kept / "runs.json").read_text())
    assert len(runs) == 2 and "--steps" in runs[1]["command"]
    assert set(runs[1]["done"]) == {"plans:layer_norm_fwd", "anchors:layer_norm_fwd",
                                    "calibrate", "ncu"}
    assert "plans:softmax" in runs[0]["done"]
    report = (kept / "REPORT.md").read_text()
    assert "the figures come from 2 runs" in report and runs[1]["command"] in report


def test_a_resumed_campaign_times_again_only_a_wall_clocked_jax_anchor(dry_run, tmp_path):
    """The first GPU run timed jax with a wall clock around one blocking call; a resumed
    campaign times that anchor again on the pipelined clock and keeps the others, which were
    timed with CUDA events as now."""
    out, _ = dry_run
    kept = tmp_path / "kept"
    shutil.copytree(out, kept)
    path = kept / "anchors" / "softmax.json"
    anchors = json.loads(path.read_text())
    gpu_campaign = campaign_module()
    anchors["jax"] = {**anchors["jax"], "note": gpu_campaign.WALL_BLOCKING, "median_us": -1.0}
    anchors["torch_eager"] = {**anchors["torch_eager"], "kept": True}
    path.write_text(json.dumps(anchors))
    resumed = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(kept),
                              "--modules", ",".join(MODULES), "--steps", "anchors"],
                             capture_output=True, text=True, cwd=REPO, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "running  anchors:softmax" in resumed.stdout
    assert "skipped  anchors:rms_norm (done)" in resumed.stdout
    again = json.loads(path.read_text())
    assert again["jax"]["clock"] == gpu_campaign.PIPELINED and again["jax"]["median_us"] > 0
    assert "note" not in again["jax"] or again["jax"]["note"] != gpu_campaign.WALL_BLOCKING
    assert again["torch_eager"]["kept"] is True


def campaign_module():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import gpu_campaign

    return gpu_campaign


def test_a_wall_clock_jax_time_is_shown_but_compared_with_nothing():
    gc = campaign_module()
    wall = {"status": "measured", "median_us": 140.0, "note": gc.WALL_BLOCKING}
    piped = {"status": "measured", "median_us": 40.0, "clock": gc.PIPELINED}
    assert not gc.comparable(wall) and gc.comparable(piped)
    assert gc._anchor_time(wall) == "140.0 (wall)" and gc._anchor_time(piped) == "40.0"


def test_losses_within_the_tie_margin_are_ties_not_losses():
    gc = campaign_module()
    lines = gc._losses({"speedups": {"m": {"stitch": 0.99, "xla": 0.90, "jax": 1.2,
                                           "torch_eager": None}}})
    text = "\n".join(lines)
    assert "- m: xla is 1.11x faster than the cost plan" in text
    assert "stitch is" not in text and "(a tie): m vs stitch" in text


def test_pipelined_timing_waits_once_per_sample_and_divides_by_the_calls():
    gc = campaign_module()
    calls, waits = [], []
    timing = gc.pipelined_timing(lambda: calls.append(1) or len(calls), waits.append,
                                 depth=5, runs=4, warmup=2)
    assert len(calls) == 2 + 5 * 4 and len(waits) == 2 + 4
    assert waits[-1] == len(calls)     # the wait is on the last call's result
    assert timing.runs == 4 and timing.warmup_runs == 2


def test_a_small_kernels_share_of_the_copy_is_judged_on_its_device_work():
    """The H200 campaign: the copy read and wrote 1 GiB in 507.9 µs (4,228.5 GB/s); the training
    step's loop.3 moved 10,485,760 bytes in 6.4 µs timed alone, 3.12 µs of which a lone launch
    adds (compiler/target/launch.py): 39 % of the copy's bandwidth alone, 76 % on device
    work."""
    gc = campaign_module()
    copy_gbs = 2 * 1073741824 / 507.856e-6 / 1e9
    share = gc.share_of_copy(10485760, 6.4, 3.12, copy_gbs)
    assert share["percent_of_copy"] == pytest.approx(100 * 10485760 / 6.4e-6 / 1e9 / copy_gbs)
    assert round(share["percent_of_copy"]) == 39
    assert share["device_gbs"] == pytest.approx(10485760 / 3.28e-6 / 1e9)
    assert round(share["device_percent_of_copy"]) == 76
    assert gc.share_of_copy(1024, 3.0, 3.12, copy_gbs)["device_percent_of_copy"] is None
