"""Synthetic cost-model samples of three small test programs and tiny models trained on them,
for the web tests of the learned model (its command, page and API). The targets come from
compiler/cost/learned/synthetic.py: the tests check files, pages and commands, never accuracy
on a GPU."""

from compiler.cost.learned import synthetic
from compiler.cost.learned.experiment import train_costmodel
from compiler.cost.learned.model import ModelConfig
from compiler.cost.learned.train import TrainConfig
from compiler.stages.learned.samples import program_samples
from compiler.stages.pipeline import import_graph
from tests.explorer.access import DATA

PROGRAMS = ("softmax", "rms_norm", "layer_norm_fwd")


def synthetic_samples() -> list:
    """Two plans per kernel of the xla and cost plans of PROGRAMS, synthetically labelled."""
    samples = []
    for name in PROGRAMS:
        source = DATA / "hlo" / f"{name}.hlo"
        graph = import_graph(source.read_bytes(), source.name)
        samples += program_samples(graph, name, "h100", strategies=("xla", "cost"), top_k=2)
    synthetic.label(samples, seed=0)
    return samples


def dataset_entry(origin: str, count: int) -> dict:
    return {"path": f"tests/{origin}.jsonl.gz", "sha256": "0123456789abcdef" * 4,
            "samples": count, "origin": origin, "gpu": None, "device": "h100"}


def train_fixture_models(model_dir):
    """Two tiny h100 models in `model_dir` (2 epochs): v1 saved as if its data were measured
    (its dataset entry says so; only so that choosing between a measured and a synthetic model
    can be tested: its figures mean nothing) and v2 synthetic, with the readout comparison."""
    samples = synthetic_samples()
    training = dict(model_config=ModelConfig(hidden=16, embedding=4, layers=1),
                    train_config=TrainConfig(epochs=2))
    measured = train_costmodel(samples, "h100", model_dir,
                               datasets=[dataset_entry("measured", len(samples))], **training)
    synthetic_model = train_costmodel(samples, "h100", model_dir,
                                      datasets=[dataset_entry("synthetic", len(samples))],
                                      compare_readouts=True, **training)
    return measured, synthetic_model
