"""Verify the generated HLO data with XLA itself (needs the generator virtualenv).

    /tmp/genvenv/bin/python tests/data/check_hlo.py

For every tests/data/hlo/NAME.hlo: parse the text with XLA's HLO parser, compile it for CPU,
run it on NAME.inputs.npz and require the results to equal NAME.outputs.npz exactly (same
dtypes, shapes and bits). This proves each .hlo file is self-contained (no elided constants)
and that the saved outputs belong to it. The benchmark modules in benchmarks/data/ are only
parsed. Uses jaxlib internals (jax._src.lib), so it is tied to the versions pinned in
tests/data/requirements-gen.txt.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

# As in gen_hlo.py: the saved outputs round bf16/f16 intermediates where the HLO says.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_allow_excess_precision=false").strip()

import jax  # noqa: E402  (after XLA_FLAGS)
import ml_dtypes
import numpy as np
from jax._src import compiler, xla_bridge
from jax._src.lib import _jax
from jax._src.lib import hlo as xla_hlo

jax.config.update("jax_platforms", "cpu")

HERE = Path(__file__).resolve().parent
BENCH_DIR = HERE.parent.parent / "benchmarks" / "data"


def load_npz(path: Path, prefix: str) -> list[np.ndarray]:
    data = np.load(path)
    arrays = []
    for i in range(len(data.files)):
        a = data[f"{prefix}{i}"]
        if a.dtype.kind == "V" and a.dtype.itemsize == 2:  # bf16 is stored as raw '|V2'
            a = a.view(ml_dtypes.bfloat16)
        arrays.append(a)
    return arrays


def run_hlo_text(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    module = xla_hlo.hlo_module_from_text(text)
    computation = xla_hlo.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir_module = _jax.mlir.xla_computation_to_mlir_module(computation)
    backend = xla_bridge.get_backend("cpu")
    devices = backend.devices()[:1]
    exe = backend.compile_and_load(mlir_module, devices, compiler.get_compile_options(1, 1))
    results = exe.execute_sharded([jax.device_put(a, devices[0]) for a in inputs])
    return [np.asarray(r[0]) for r in results.disassemble_into_single_device_arrays()]


def main():
    for hlo in sorted((HERE / "hlo").glob("*.hlo")):
        stem = hlo.with_suffix("")
        got = run_hlo_text(hlo.read_text(), load_npz(Path(f"{stem}.inputs.npz"), "arg"))
        want = load_npz(Path(f"{stem}.outputs.npz"), "out")
        assert len(got) == len(want), f"{hlo.name}: {len(got)} results vs {len(want)} saved"
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, (hlo.name, i, g.dtype, w.dtype)
            # Bitwise comparison (NaNs included) through an unsigned view.
            view = np.dtype(f"u{g.dtype.itemsize}") if g.dtype != np.bool_ else np.bool_
            assert np.array_equal(g.view(view), w.view(view)), f"{hlo.name}: out{i} differs"
        print(f"{hlo.name:28s} OK ({len(want)} outputs bit-identical)")
    for gz in sorted(BENCH_DIR.glob("*.hlo.gz")):
        module = xla_hlo.hlo_module_from_text(gzip.decompress(gz.read_bytes()).decode())
        n = sum(len(c.instructions()) for c in module.computations())
        print(f"{gz.name:28s} parsed, {n} instructions")


if __name__ == "__main__":
    main()
