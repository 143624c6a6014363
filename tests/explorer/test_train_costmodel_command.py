"""`manage.py train_costmodel` (explorer/management/commands/train_costmodel.py): samples from
the web app's measurements and the dataset files, a versioned model in LEARNED_MODEL_DIR.

The dataset file here is tiny and synthetic (samples.program_samples + synthetic.label); the
measurements are fabricated with the GPU runner's result classes (tests/explorer/measurements.py).
Training runs 2 epochs: these tests are about what goes in and where the model goes, not about
its accuracy.
"""
import tempfile
from io import StringIO
from pathlib import Path

from django.core.management import CommandError, call_command
from django.test import override_settings

from compiler.cost.learned import synthetic
from compiler.cost.learned.dataset import dataset_header, write_dataset
from compiler.cost.learned.registry import model_files
from compiler.cost.learned.train import read_header
from explorer.graph_store import file_name, graph_storage
from explorer.management.commands.train_costmodel import MEASUREMENTS
from explorer.models import GraphBlob, Measurement, Run, RunArtifact
from tests.explorer.access import AccessTestCase
from tests.explorer.learned import PROGRAMS, synthetic_samples
from tests.explorer.measurements import GPU, measurement_result



def write_synthetic_dataset(path: Path) -> int:
    """A synthetic dataset of three small programs, two plans per kernel; its sample count."""
    samples = synthetic_samples()
    write_dataset(path, dataset_header("h100", "synthetic", synthetic.DESCRIPTION), samples)
    return len(samples)


def distinct_kernels(artifact: dict) -> int:
    """Generated kernels of the h100 plans, a kernel two strategies cut alike counted once."""
    return len({(entry["kind"], frozenset(entry["nodes"] + entry["recomputed"]),
                 frozenset(entry["inputs"]), frozenset(entry["outputs"]))
                for plan in artifact["devices"]["h100"]["strategies"].values()
                for entry in plan["kernels"] if entry["kind"] != "library"})


class TrainCostModelCommandTests(AccessTestCase):
    def setUp(self):
        self.data_dir = Path(self.enterContext(tempfile.TemporaryDirectory()))
        self.model_dir = Path(self.enterContext(tempfile.TemporaryDirectory()))
        self.enterContext(override_settings(LEARNED_DATA_DIRS=[str(self.data_dir)],
                                            LEARNED_MODEL_DIR=str(self.model_dir)))

    def train(self, *args) -> str:
        out = StringIO()
        call_command("train_costmodel", "--device", "h100", "--epochs", "2", *args,
                     stdout=out, stderr=StringIO())
        return out.getvalue()

    def measure(self, run) -> None:
        Measurement.objects.create(run=run, status=Measurement.DONE, gpu=GPU,
                                   result=measurement_result(run.artifact))

    def test_without_any_data_it_says_how_to_collect_some(self):
        with self.assertRaises(CommandError) as raised:
            self.train()

        message = str(raised.exception)
        self.assertIn(f"no measurements for h100 and no dataset files in {self.data_dir}",
                      message)
        self.assertIn("python -m compiler collect-costmodel-data", message)
        self.assertEqual(list(self.model_dir.iterdir()), [])

    def test_it_refuses_a_synthetic_dataset_unless_allowed(self):
        path = self.data_dir / "h100-synthetic.jsonl.gz"
        write_synthetic_dataset(path)

        with self.assertRaises(CommandError) as raised:
            self.train()

        self.assertIn(str(path), str(raised.exception))
        self.assertIn("--allow-synthetic", str(raised.exception))
        self.assertEqual(list(self.model_dir.iterdir()), [])

    def test_with_synthetic_data_allowed_it_saves_a_synthetic_model(self):
        count = write_synthetic_dataset(self.data_dir / "h100-synthetic.jsonl.gz")

        output = self.train("--allow-synthetic")

        [saved] = model_files(self.model_dir, "h100")
        self.assertEqual(saved.path.name, "learned-h100-v1.pt")
        self.assertIn(str(saved.path), output)
        header = read_header(saved.path)
        self.assertEqual(header["origin"], "synthetic")
        self.assertEqual([(d["origin"], d["samples"]) for d in header["datasets"]],
                         [("synthetic", count)])
        self.assertEqual(sorted(header["programs"]["train"] + header["programs"]["test"]),
                         sorted(PROGRAMS))
        learned_mape = header["evaluation"]["program"]["learned"]["mape"]
        self.assertIn(f"{learned_mape:.3f}", output)

    def test_measured_runs_train_a_measured_model_that_lists_them_as_one_dataset(self):
        runs = [self.make_done_run("a" * 22), self.make_done_run("b" * 22)]
        for run in runs:
            self.measure(run)

        self.train()

        [saved] = model_files(self.model_dir, "h100")
        header = read_header(saved.path)
        self.assertEqual(header["origin"], "measured")
        [entry] = header["datasets"]
        self.assertEqual((entry["path"], entry["origin"], entry["gpu"], entry["device"]),
                         (MEASUREMENTS, "measured", GPU, "h100"))
        self.assertEqual(entry["samples"], 2 * distinct_kernels(runs[0].artifact))
        self.assertEqual(sorted(header["programs"]["train"] + header["programs"]["test"]),
                         sorted(run.pk for run in runs))

    def test_a_run_compiled_by_another_compiler_version_is_left_out(self):
        runs = [self.make_done_run(run_id) for run_id in ("a" * 22, "b" * 22, "c" * 22)]
        for run in runs:
            self.measure(run)
        stale = dict(runs[2].artifact, compiler_version="0123456789abcdef")
        RunArtifact.objects.filter(run_id=runs[2].pk).update(data=stale)

        self.train()

        [saved] = model_files(self.model_dir, "h100")
        programs = saved.header["programs"]
        self.assertEqual(sorted(programs["train"] + programs["test"]),
                         [runs[0].pk, runs[1].pk])

    def test_a_run_whose_graph_file_is_gone_is_left_out_saying_so(self):
        runs = [self.make_done_run(run_id) for run_id in ("a" * 22, "b" * 22, "c" * 22)]
        for run in runs:
            self.measure(run)
        lost = GraphBlob.store(b"HloModule lost\n")
        Run.objects.filter(pk=runs[2].pk).update(graph_id=lost)
        graph_storage().delete(file_name(lost))

        report = StringIO()
        call_command("train_costmodel", "--device", "h100", "--epochs", "2", stdout=StringIO(),
                     stderr=report)

        [saved] = model_files(self.model_dir, "h100")
        programs = saved.header["programs"]
        self.assertEqual(sorted(programs["train"] + programs["test"]),
                         [runs[0].pk, runs[1].pk])
        self.assertIn("left out runs whose uploaded graph's file is missing or damaged: 1",
                      report.getvalue())

    def test_no_measurements_leaves_the_web_apps_timings_out(self):
        for run_id in ("a" * 22, "b" * 22):
            self.measure(self.make_done_run(run_id))

        with self.assertRaises(CommandError) as raised:
            self.train("--no-measurements")

        self.assertIn("no measurements for h100", str(raised.exception))

    def test_a_second_training_is_the_next_version(self):
        write_synthetic_dataset(self.data_dir / "h100-synthetic.jsonl.gz")

        self.train("--allow-synthetic")
        self.train("--allow-synthetic", "--readout", "max")

        files = model_files(self.model_dir, "h100")
        self.assertEqual([f.version for f in files], [1, 2])
        self.assertEqual(files[1].header["config"]["readout"], "max")
