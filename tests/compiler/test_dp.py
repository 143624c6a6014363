"""The data-parallel overlap simulator (compiler/stages/dp.py) against closed-form cases: one
bucket after all the compute takes compute + 2(n-1)/n x B / bandwidth + 2(n-1) x alpha; a
bucket ready early enough is hidden entirely; one GPU communicates nothing; DDP's bucket
filling; and the CLI's --dp-world in text and JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.stages.dp import (LINKS, DataParallel, Link, data_parallel, dp_overlap,
                                fill_buckets, parse_link)

REPO = Path(__file__).parents[2]
STEP = REPO / "tests" / "data" / "hlo" / "transformer_step_bf16.hlo"
LINK = Link("test", gbps=100.0, alpha_us=5.0, source="a test")
MIB = 1024 * 1024


def timeline(kernels: list[tuple[str, float, float]], outputs: list[tuple[str, int, str]]
             ) -> dict:
    """A projected timeline: kernels (name, start, end), outputs (name, bytes, writer)."""
    ends = {name: end for name, _, end in kernels}
    return {"models": ["projected"], "unavailable": None,
            "total_us": {"projected": max(ends.values())},
            "kernels": [{"name": name, "kind": "loop", "limiter": "dram",
                         "start_us": {"projected": start}, "end_us": {"projected": end}}
                        for name, start, end in kernels],
            "outputs": [{"name": name, "bytes": size, "kernel": writer,
                         "ready_us": {"projected": ends[writer]}}
                        for name, size, writer in outputs]}


def training(*gradients: str) -> dict:
    return {"loss": ["loss"], "gradients": list(gradients), "reason": None}


@pytest.mark.parametrize("world", [2, 8, 64])
def test_one_bucket_after_all_compute_takes_the_closed_form(world):
    size = 10 * MIB
    step = timeline([("k", 0.0, 300.0)], [("g", size, "k")])
    result = dp_overlap(step, training("g"), DataParallel(world, LINK, 25 * MIB))
    expected_comm = 2 * (world - 1) / world * size / (LINK.gbps * 1e3) \
        + 2 * (world - 1) * LINK.alpha_us
    for release in ("step_end", "when_ready"):
        figures = result["releases"][release]
        assert figures["step_us"] == pytest.approx(300.0 + expected_comm, abs=1e-3)
        assert figures["exposed_us"] == pytest.approx(expected_comm, abs=1e-3)


def test_a_bucket_ready_early_is_hidden_when_outputs_are_released_when_ready():
    # g is written at 10 us; its all-reduce (8 GPUs, 1 MiB: 18.4 + 70 us) ends long before
    # the compute's 1,000 us, so releasing it when ready hides it all.
    step = timeline([("early", 0.0, 10.0), ("late", 10.0, 1000.0)], [("g", MIB, "early")])
    result = dp_overlap(step, training("g"), DataParallel(8, LINK, 25 * MIB))
    assert result["releases"]["when_ready"]["step_us"] == pytest.approx(1000.0)
    assert result["releases"]["when_ready"]["exposed_us"] == pytest.approx(0.0)
    comm = 2 * 7 / 8 * MIB / 1e5 + 14 * LINK.alpha_us
    assert result["releases"]["step_end"]["exposed_us"] == pytest.approx(comm, abs=1e-3)
    assert result["held_back"][0]["kernel"] == "early"


def test_one_gpu_communicates_nothing():
    step = timeline([("k", 0.0, 50.0)], [("g", 100 * MIB, "k")])
    result = dp_overlap(step, training("g"), DataParallel(1, LINKS["ib"], 25 * MIB))
    for figures in result["releases"].values():
        assert figures["step_us"] == 50.0 and figures["exposed_us"] == 0.0


def test_buckets_go_one_after_another_on_the_link():
    # Two 1 MiB buckets ready at once: the second starts when the first ends.
    step = timeline([("k", 0.0, 100.0)], [("a", MIB, "k"), ("b", MIB, "k")])
    result = dp_overlap(step, training("a", "b"), DataParallel(4, LINK, MIB))
    one = 2 * 3 / 4 * MIB / 1e5 + 6 * LINK.alpha_us
    buckets = result["releases"]["when_ready"]["buckets"]
    assert len(buckets) == 2
    assert buckets[1]["start_us"] == pytest.approx(buckets[0]["end_us"])
    assert result["releases"]["when_ready"]["step_us"] == pytest.approx(100.0 + 2 * one,
                                                                        abs=1e-3)


def test_buckets_fill_in_ready_order_up_to_the_cap():
    gradients = [{"name": name, "bytes": size, "ready_us": ready, "index": index}
                 for index, (name, size, ready) in enumerate(
                     [("w0", 10, 5.0), ("w1", 10, 1.0), ("w2", 30, 3.0), ("w3", 5, 1.0)])]
    buckets = fill_buckets(gradients, cap=25)
    # Ready at 1 us: w3 then w1 (reverse output order, as DDP); w2 alone is past the cap.
    assert [[g["name"] for g in bucket] for bucket in buckets] == [["w3", "w1"], ["w2"],
                                                                   ["w0"]]


def test_a_graph_that_is_not_a_training_step_says_why():
    step = timeline([("k", 0.0, 5.0)], [("y", 4, "k")])
    result = dp_overlap(step, {"loss": [], "gradients": [], "reason": "no loss"},
                        data_parallel(8, "nvlink"))
    assert not result["training"] and result["reason"] == "no loss"


def test_interconnects_are_presets_or_a_bandwidth():
    assert parse_link("NVLink").gbps == 450.0 and parse_link("ib").gbps == 50.0
    assert parse_link("200").gbps == 200.0
    for bad in ("infiniband", "-3", "0", "nan"):
        with pytest.raises(InputError, match="interconnect"):
            parse_link(bad)
    with pytest.raises(InputError, match="world size"):
        data_parallel(0, "ib")
    assert data_parallel(8, "ib").bucket_bytes == 25 * MIB


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compiler", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_explore_simulates_data_parallel_steps_in_text_and_json():
    done = _cli("explore", str(STEP), "--strategy", "xla,cost", "--dp-world", "8",
                "--interconnect", "ib", "--bucket-mb", "1", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for plan in result["strategies"].values():
        dp = plan["dp"]
        assert dp["training"] and dp["gradients"] == 28
        assert dp["setup"]["world"] == 8 and dp["setup"]["link"]["gbps"] == 50.0
        assert dp["compute_us"] == plan["timeline"]["total_us"]["projected"]
        for figures in dp["releases"].values():
            assert figures["step_us"] == pytest.approx(dp["compute_us"]
                                                       + figures["exposed_us"], abs=1e-3)
        # Releasing each output when ready never makes the step slower.
        assert dp["releases"]["when_ready"]["step_us"] <= \
            dp["releases"]["step_end"]["step_us"] + 1e-6
    text = _cli("explore", str(STEP), "--strategy", "cost", "--dp-world", "8")
    assert text.returncode == 0, text.stderr
    assert "exposed communication" in text.stdout and "first buckets wait on" in text.stdout
    bad = _cli("explore", str(STEP), "--dp-world", "8", "--interconnect", "carrier-pigeon")
    assert bad.returncode == 1 and "unknown interconnect" in bad.stderr
