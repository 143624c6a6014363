"""`python -m compiler inspect|run` as a user runs it: a subprocess, exit codes, stdout, stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
CORPUS = DATA / "xla"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compiler", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_inspect_prints_a_summary():
    result = cli("inspect", str(DATA / "hlo" / "softmax.hlo"))
    assert result.returncode == 0, result.stderr
    assert "nodes" in result.stdout and "exponential" in result.stdout
    assert "parameters (1):" in result.stdout


def test_inspect_json_is_one_object_with_the_documented_keys():
    result = cli("inspect", str(DATA / "hlo" / "layer_norm_fwd.hlo"), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["graph"]
    assert summary["nodes"] == sum(summary["ops"].values())
    assert len(summary["parameters"]) == 3  # x, gamma, beta
    assert summary["flops"] > 0 and summary["unfused_bytes"] > summary["parameter_bytes"]
    assert summary["ops"]["reduce"] >= 2  # mean and variance


def test_inspect_of_a_split_file_chooses_a_module():
    path = CORPUS / "dot_bf16.hlo"
    first = json.loads(cli("inspect", str(path), "--json").stdout)["graph"]
    second = json.loads(cli("inspect", str(path), "--json", "--module", "1").stdout)["graph"]
    assert first["module_count"] == second["module_count"] > 1
    assert second["module"] == 1
    result = cli("inspect", str(path), "--module", "99")
    assert result.returncode == 1 and "module 99" in result.stderr


def test_run_writes_outputs_in_flattened_order(tmp_path):
    out = tmp_path / "out.npz"
    module = DATA / "hlo" / "adam"
    result = cli("run", f"{module}.hlo", "--inputs", f"{module}.inputs.npz", "--output", str(out))
    assert result.returncode == 0, result.stderr
    produced, expected = np.load(out), np.load(f"{module}.outputs.npz")
    assert sorted(produced.files) == sorted(expected.files)
    for name in expected.files:
        np.testing.assert_allclose(produced[name], expected[name], rtol=1e-5, atol=1e-6)


def test_run_names_missing_inputs(tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.zeros((4, 8), np.float32))
    result = cli("run", str(DATA / "hlo" / "layer_norm_fwd.hlo"), "--inputs", str(inputs),
                 "--output", str(tmp_path / "o.npz"))
    assert result.returncode == 1
    assert "missing arg1, arg2" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("content, expected", [
    ("ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] frob(a)\n}\n", "bad.hlo:3:19"),
    ("ENTRY e {\n  a = f32[4] parameter(0)\n", "bad.hlo:"),
    ("ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[8] negate(a)\n}\n", "bad.hlo:3:8"),
])
def test_bad_input_gives_a_located_message_and_no_traceback(tmp_path, content, expected):
    path = tmp_path / "bad.hlo"
    path.write_text(content)
    result = cli("inspect", str(path))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {expected}"), result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_file_is_an_error_not_a_traceback(tmp_path):
    result = cli("inspect", str(tmp_path / "nope.hlo"))
    assert result.returncode == 1 and "nope.hlo" in result.stderr
    assert "Traceback" not in result.stderr


def test_random_bytes_are_not_a_format_it_reads_and_a_cut_onnx_model_is_an_onnx_error(tmp_path):
    noise, cut = tmp_path / "noise.bin", tmp_path / "cut.bin"
    noise.write_bytes(bytes(range(256)) * 8)
    cut.write_bytes((DATA / "onnx" / "mlp_layernorm.dynamo.onnx").read_bytes()[:3000])
    result = cli("inspect", str(noise))
    assert result.returncode == 1
    assert result.stderr.startswith("error: noise.bin: not a format we read: the file is binary "
                                    "data, but not an ONNX model"), result.stderr
    result = cli("inspect", str(cut))
    assert result.returncode == 1
    assert result.stderr.startswith("error: cut.bin: not a valid ONNX model"), result.stderr


def test_gzipped_hlo_is_read():
    result = cli("inspect", str(ROOT / "benchmarks" / "data" / "transformer_12l.hlo.gz"), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["graph"]["nodes"] > 3000


@pytest.mark.parametrize("path", [
    DATA / "onnx" / "transformer_encoder.dynamo.onnx",
    DATA / "onnx" / "conv_bn_silu_unfolded.torchscript.onnx",
    DATA / "json" / "layer_norm.json",
], ids=lambda p: p.name)
def test_inspect_reads_onnx_and_json(path):
    result = cli("inspect", str(path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["graph"]
    assert summary["nodes"] > 5 and summary["parameters"]


def test_run_takes_bf16_inputs_saved_by_numpy(tmp_path):
    import ml_dtypes

    graph = tmp_path / "double.hlo"
    graph.write_text("ENTRY e {\n  a = bf16[3] parameter(0)\n  ROOT b = bf16[3] add(a, a)\n}\n")
    np.savez(tmp_path / "in.npz", arg0=np.array([1, 2.5, -3], ml_dtypes.bfloat16))
    result = cli("run", str(graph), "--inputs", str(tmp_path / "in.npz"),
                 "--output", str(tmp_path / "out.npz"))
    assert result.returncode == 0, result.stderr
    out = np.load(tmp_path / "out.npz")["out0"].view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.astype(np.float32), [2, 5, -6])


def test_run_of_an_onnx_model_matches_torch(tmp_path):
    model = DATA / "onnx" / "mlp_layernorm"
    result = cli("run", f"{model}.torchscript.onnx", "--inputs", f"{model}.inputs.npz",
                 "--output", str(tmp_path / "out.npz"))
    assert result.returncode == 0, result.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["out0"],
                               np.load(f"{model}.outputs.npz")["out0"], rtol=1e-4, atol=1e-5)


def test_a_while_loop_past_the_configured_limit_stops_with_a_message(tmp_path):
    graph = tmp_path / "forever.hlo"
    graph.write_text("""
cond {
  s = s32[] parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  s = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT n = s32[] add(s, one)
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=cond, body=body
}
""")
    np.savez(tmp_path / "in.npz", arg0=np.int32(0))
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "run", str(graph), "--inputs", str(tmp_path / "in.npz"),
         "--output", str(tmp_path / "out.npz")], cwd=ROOT, capture_output=True, text=True,
        timeout=120, env={**os.environ, "FUSION_EXPLORER_MAX_WHILE_ITERATIONS": "50"})
    assert result.returncode == 1 and "50" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_limit_setting_is_named(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "inspect", str(DATA / "hlo" / "softmax.hlo")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "FUSION_EXPLORER_MAX_NODES": "ten"})
    assert result.returncode == 1 and "FUSION_EXPLORER_MAX_NODES" in result.stderr
    assert "Traceback" not in result.stderr


def wide_graph(path: Path, parameters: int = 5000) -> Path:
    """An HLO module whose summary lists many parameters: far more output than a pipe holds."""
    lines = ["HloModule wide", "ENTRY e {"]
    lines += [f"  p{i} = f32[2] parameter({i})" for i in range(parameters)]
    types = ", ".join(["f32[2]"] * parameters)
    names = ", ".join(f"p{i}" for i in range(parameters))
    lines += [f"  ROOT t = ({types}) tuple({names})", "}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_reader_that_closes_the_pipe_early_gets_no_traceback_and_status_141(tmp_path, as_json):
    graph = wide_graph(tmp_path / "wide.hlo")
    command = [sys.executable, "-m", "compiler", "inspect", str(graph)]
    command += ["--json"] if as_json else []
    with open(tmp_path / "stderr", "w+") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr)
        # What `| head -c 16` reads (--json is a single line, so `head -1` would read it all).
        first = os.read(process.stdout.fileno(), 16)
        process.stdout.close()
        status = process.wait(timeout=120)
        stderr.seek(0)
        errors = stderr.read()
    assert first.startswith(b"{" if as_json else b"graph wide")
    assert errors == ""
    assert status == 141
