"""Versioned learned cost model files in one directory: which models exist, which one is active.

Models may also be read from more directories than the one models are trained into: the
models shipped with the code (`SHIPPED`, trained on the GPU campaign's measured times) sit
beside the deployment's own. Every function that lists models takes one directory or a
sequence of them; versions count across all of them, so a model trained here takes the next
version after the shipped one and becomes the active one.

Every training run (experiment.train_costmodel) writes a new file, `learned-<device>-v<N>.pt`,
N one more than the largest version of that device already there, and never overwrites one:
a run's figures and links keep pointing at the model that produced them. The active model of
a device is its newest file trained on measured GPU times; a model trained on synthetic
targets (origin "synthetic", see synthetic.py) becomes active only where the caller allows
it (tests, demos), because its predictions are not GPU times.

Listing reads each file's header only (train.read_header), so a model saved for other
features than this code computes is still listed, with its header, and `load_model` says why
it cannot be used; a file that is not a model file at all is skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Sequence
from pathlib import Path

from compiler.cost.learned.features import other_features
from compiler.cost.learned.train import read_header
from compiler.errors import InputError
from compiler.target.devices import get_device

_NAME = re.compile(r"learned-(?P<device>[a-z0-9_]+)-v(?P<version>[0-9]+)\.pt")


@dataclass
class ModelFile:
    """One model file of the registry; `device` and `version` come from its name."""
    path: Path
    device: str
    version: int
    header: dict

    @property
    def origin(self) -> str:
        """What the model's training targets were: "measured" or "synthetic"."""
        return self.header["origin"]

    @property
    def label(self) -> str:
        return f"learned-{self.device}-v{self.version}"


# The models that come with the code: trained by benchmarks/gpu_campaign.py on measured times.
SHIPPED = Path(__file__).resolve().parent / "models"

Directories = str | Path | Sequence[str | Path]


def reading_dirs(local: str | Path, shipped: str | Path | None) -> list[Path]:
    """The directories models are read from: the deployment's own, then the shipped ones
    (None: none)."""
    return [Path(local)] + ([Path(shipped)] if shipped is not None else [])


def _directories(directories: Directories) -> list[Path]:
    if isinstance(directories, (str, Path)):
        return [Path(directories)]
    return [Path(d) for d in directories]


def _named(directories: Directories, device: str | None) -> list[tuple[Path, str, int]]:
    """(path, device, version) of every file named like a model, of `device` when given."""
    out = []
    for directory in _directories(directories):
        if not directory.is_dir():
            continue
        for path in directory.iterdir():
            match = _NAME.fullmatch(path.name)
            if match and (device is None or match["device"] == device):
                out.append((path, match["device"], int(match["version"])))
    return out


def _canonical(device: str) -> str:
    return get_device(device).name


def model_files(directory: Directories, device: str | None = None) -> list[ModelFile]:
    """The model files in `directory` (of `device` when given), ordered by device, each
    device's newest version last. Files that are not model files of this layout, or whose
    header disagrees with their name about the device or origin, are skipped."""
    device = _canonical(device) if device is not None else None
    files = []
    for path, name_device, version in _named(directory, device):
        try:
            header = read_header(path)
        except InputError:
            continue
        if header.get("device") != name_device or header.get("origin") not in (
                "measured", "synthetic"):
            continue
        files.append(ModelFile(path, name_device, version, header))
    return sorted(files, key=lambda f: (f.device, f.version))


def active_model(directory: Directories, device: str,
                 allow_synthetic: bool = False) -> ModelFile | None:
    """The newest model of `device` trained on measured times (or on any targets, with
    `allow_synthetic`); None when there is none."""
    return _newest_usable(model_files(directory, device), allow_synthetic)


def _newest_usable(files: list[ModelFile], allow_synthetic: bool) -> ModelFile | None:
    """The active one of one device's files (model_files' order, newest last)."""
    usable = [f for f in files if allow_synthetic or f.origin == "measured"]
    return usable[-1] if usable else None


def next_model_path(directory: str | Path, device: str, also: Directories = ()) -> Path:
    """Where the next model of `device` goes in `directory`: one version above every file
    named like a model of that device there and in `also` (the shipped models), readable or
    not, so no file is ever overwritten and no two models share a label."""
    device = _canonical(device)
    versions = [version for _, _, version in _named([directory, *_directories(also)], device)]
    return Path(directory) / f"learned-{device}-v{max(versions, default=0) + 1}.pt"


@dataclass
class ModelStatus:
    """A model file as pages and the API list it: whether the compiler uses it, and why not."""
    file: ModelFile
    active: bool
    why_not: str | None     # why the compiler does not use it (None for the active one)
    stale: bool             # trained on other features than this code computes: retrain

    @property
    def label(self) -> str:
        return self.file.label


def catalogue(directory: Directories, allow_synthetic: bool = False
              ) -> dict[str, list[ModelStatus]]:
    """Every model of `directory` per device, newest first, each with its status."""
    by_device: dict[str, list[ModelFile]] = {}
    for model_file in model_files(directory):
        by_device.setdefault(model_file.device, []).append(model_file)
    out = {}
    for device, files in by_device.items():
        active = _newest_usable(files, allow_synthetic)
        statuses = []
        for model_file in reversed(files):
            if model_file is active:
                why_not = None
            elif model_file.origin == "synthetic" and not allow_synthetic:
                why_not = "synthetic targets: used only with LEARNED_ALLOW_SYNTHETIC"
            else:
                why_not = f"older than {active.label}"
            statuses.append(ModelStatus(model_file, model_file is active, why_not,
                                        other_features(model_file.header) is not None))
        out[device] = statuses
    return out
