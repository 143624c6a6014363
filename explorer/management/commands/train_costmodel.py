"""`python manage.py train_costmodel --device h100`: train the next version of a device's
learned cost model from the GPU timings the web app holds and the dataset files beside it.

The samples:
- from the measurements (unless --no-measurements): the newest finished measurement that
  yields any of every finished run planned for the device by this compiler version
  (compiler.stages.learned.records; program = the run's id, family from its file name).
  Older measurements of the same run would time the same kernels again: copies of one sample
  in one program, not more data.
- from the dataset files for the device in settings.LEARNED_DATA_DIRS, or in the files and
  directories given with --data (`python -m compiler collect-costmodel-data` writes them on
  a GPU machine). A file with synthetic targets is refused unless --allow-synthetic: a model
  trained on one predicts a made-up function, not GPU times.

The model (compiler.cost.learned.experiment.train_costmodel) is saved as the next version in
settings.LEARNED_MODEL_DIR, and the command prints its path and the learned, SOL and projected
models' errors on the held-out programs and families. The measurements enter the model
file's list of datasets as one entry, "explorer measurements".
"""
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from compiler.cost.learned import dataset
from compiler.cost.learned.experiment import format_evaluation, load_datasets, train_costmodel
from compiler.cost.learned.model import READOUTS, ModelConfig
from compiler.cost.learned.registry import reading_dirs
from compiler.cost.learned.train import TrainConfig
from compiler.errors import InputError
from compiler.stages.learned import records
from compiler.target.devices import get_device
from compiler.version import compiler_version
from explorer.graph_store import GraphUnavailable
from explorer.models import Measurement, Run

MEASUREMENTS = "explorer measurements"
RUN_OTHER_COMPILER = "runs compiled by another compiler version"
RUN_GRAPH_UNAVAILABLE = "runs whose uploaded graph's file is missing or damaged"
DATASET_PATTERN = "*.jsonl.gz"


def measured_samples(device: str) -> tuple[list, dict | None, dict]:
    """(samples, their dataset entry or None when there are none, what was left out: kernels
    per records.SKIP_REASONS reason, and runs compiled by another compiler version) from the
    web app's finished measurements of finished runs for `device`."""
    samples, skipped, gpus = [], {}, set()
    runs = Run.objects.filter(status=Run.DONE, measurements__status=Measurement.DONE)
    for run in runs.distinct().order_by("pk").iterator():
        if device not in run.devices:
            continue
        if run.artifact.get("compiler_version") != compiler_version():
            # Its registers and shared memory are another compiler's build of the kernels.
            skipped[RUN_OTHER_COMPILER] = skipped.get(RUN_OTHER_COMPILER, 0) + 1
            continue
        try:
            graph = bytes(run.graph_bytes)
        except GraphUnavailable:   # the graph store lost it: the other runs still train
            skipped[RUN_GRAPH_UNAVAILABLE] = skipped.get(RUN_GRAPH_UNAVAILABLE, 0) + 1
            continue
        results = run.artifact["devices"][device]
        for measurement in run.measurements.filter(status=Measurement.DONE):
            found, reasons = records.measurement_samples(
                graph, run.filename, device, measurement.result, results,
                program=run.pk, family=dataset.family_of(run.filename))
            for reason, count in reasons.items():
                skipped[reason] = skipped.get(reason, 0) + count
            if found:
                samples += found
                gpus.add(measurement.gpu)
                break
    if not samples:
        return [], None, skipped
    entry = {"path": MEASUREMENTS, "samples": len(samples), "origin": "measured",
             "gpu": ", ".join(sorted(gpus)), "device": device}
    return samples, entry, skipped


def dataset_files(places, device: str) -> list[Path]:
    """The dataset files for `device`: each directory's *.jsonl.gz files made for it, and
    every file named outright (load_datasets refuses one made for another device)."""
    files = []
    for place in map(Path, places):
        if place.is_dir():
            files += [path for path in sorted(place.glob(DATASET_PATTERN))
                      if dataset.read_dataset_header(path).get("device") == device]
        elif place.exists():
            files.append(place)
        else:
            raise InputError("no such dataset file or directory", str(place))
    return files


class Command(BaseCommand):
    help = ("Train the next learned cost model of a device from the web app's GPU measurements "
            "and the dataset files in LEARNED_DATA_DIRS (or --data), into LEARNED_MODEL_DIR.")

    def add_arguments(self, parser):
        parser.add_argument("--device", required=True, help="the device model, e.g. h100")
        parser.add_argument("--data", nargs="+", metavar="FILE_OR_DIR",
                            help="dataset files or directories instead of LEARNED_DATA_DIRS")
        parser.add_argument("--no-measurements", action="store_true",
                            help="leave the web app's measurements out")
        parser.add_argument("--readout", choices=READOUTS,
                            help="the model's readout (default: ModelConfig's)")
        parser.add_argument("--compare-readouts", action="store_true",
                            help="train every readout and keep the best on held-out programs")
        parser.add_argument("--epochs", type=int, help="training epochs (default: TrainConfig's)")
        parser.add_argument("--allow-synthetic", action="store_true",
                            help="accept dataset files with synthetic targets (tests, demos: "
                                 "the model is labelled synthetic and not used unless "
                                 "LEARNED_ALLOW_SYNTHETIC)")

    def handle(self, *args, device: str, data, no_measurements: bool, readout, epochs,
               compare_readouts: bool, allow_synthetic: bool, **options):
        try:
            device = get_device(device).name
            places = data or [Path(settings.BASE_DIR) / d for d in settings.LEARNED_DATA_DIRS]
            samples, datasets, skipped = [], [], {}
            if not no_measurements:
                samples, entry, skipped = measured_samples(device)
                datasets += [entry] if entry else []
            files = dataset_files(places, device)
            self._refuse_synthetic(files, allow_synthetic)
            if files:
                file_samples, described = load_datasets(files, device)
                samples += file_samples
                datasets += described
            if not samples:
                raise CommandError(
                    f"no measurements for {device} and no dataset files in "
                    f"{', '.join(map(str, places))}: collect some on a GPU machine with "
                    f"python -m compiler collect-costmodel-data FILES... --device {device} "
                    f"--out <one of those directories>/{device}-<date>.jsonl.gz")
            self._report_data(datasets, skipped)
            model_file = train_costmodel(
                samples, device, settings.LEARNED_MODEL_DIR, datasets=datasets,
                model_config=ModelConfig(readout=readout) if readout else None,
                train_config=TrainConfig(epochs=epochs) if epochs else None,
                compare_readouts=compare_readouts,
                also=reading_dirs(settings.LEARNED_MODEL_DIR,
                                  settings.LEARNED_SHIPPED_MODEL_DIR)[1:])
        except InputError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{model_file.path} ({model_file.label}, origin {model_file.origin})")
        self.stdout.write("\n".join(format_evaluation(model_file.header)))

    def _refuse_synthetic(self, files: list[Path], allow_synthetic: bool) -> None:
        if allow_synthetic:
            return
        for path in files:
            if dataset.read_dataset_header(path).get("origin") == "synthetic":
                raise CommandError(f"{path}: synthetic targets, not GPU timings; pass "
                                   "--allow-synthetic to train a pipeline-test model on it")

    def _report_data(self, datasets: list[dict], skipped: dict) -> None:
        for entry in datasets:
            self.stderr.write(f"{entry['path']}: {entry['samples']} samples "
                              f"({entry['origin']}, {entry.get('gpu') or 'no GPU'})")
        for reason, count in sorted(skipped.items()):
            runs = reason in (RUN_OTHER_COMPILER, RUN_GRAPH_UNAVAILABLE)
            what = "left out" if runs else "measured kernels left out,"
            self.stderr.write(f"{what} {reason}: {count}")
