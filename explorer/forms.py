"""The upload form and the sample gallery it offers."""
from __future__ import annotations

import json
import re

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django import forms
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from compiler.errors import InputError
from compiler.target.devices import DEVICES
from compiler.target.launch import DEFAULT_RUNTIME, RUNTIMES
from explorer.graph_store import StagedFile
from explorer.models import MAX_TAG_LENGTH, MAX_TAGS, RUN_NAME_LENGTH
from explorer.presenters import STRATEGY_ORDER
from explorer.runs import QuotaExceeded, check_quota
from explorer.uploads import graph_of

# The real graphs the test suite runs (JAX-emitted HLO, PyTorch-exported ONNX, the JSON format),
# from these folders of tests/data (not XLA's own test inputs in tests/data/xla, which are
# fragments of compiler tests rather than models).
SAMPLES_DIR = Path(settings.BASE_DIR) / "tests" / "data"
SAMPLE_FOLDERS = ("hlo", "json", "onnx")
SAMPLE_SUFFIXES = {".hlo": "HLO", ".json": "JSON", ".onnx": "ONNX"}

# What each strategy does, in the words the upload form shows next to its checkbox.
STRATEGY_LABELS = {
    "unfused": "unfused — one kernel per op",
    "xla": "xla — XLA:GPU's fusion rules",
    "stitch": "stitch — AStitch shared-memory stitching",
    "cost": "cost — cost-based global search",
    "xla-gpu": "xla-gpu — XLA:GPU's own plan, from its compiler",
}

# How each runtime launches a plan's kernels, in the words the upload form shows.
RUNTIME_CHOICES = (
    ("graph", "CUDA graph — one replay per step, as XLA:GPU's command buffers and "
              "torch.compile's reduce-overhead mode run it"),
    ("stream", "stream launches — the host launches each kernel, as PyTorch eager and "
               "torch.compile's default mode do"),
)
assert [name for name, _ in RUNTIME_CHOICES] == list(RUNTIMES)

VISIBILITY_CHOICES = (
    ("private", "Private: only me"),
    ("team", "Team: members of the team below"),
    ("public", "Public: anyone with the link"),
)


@dataclass(frozen=True)
class Sample:
    key: str        # path under SAMPLES_DIR, e.g. "hlo/softmax.hlo"
    title: str
    fmt: str
    size: int

    @property
    def path(self) -> Path:
        return SAMPLES_DIR / self.key


@lru_cache(maxsize=1)
def samples() -> tuple[Sample, ...]:
    """Every graph file under tests/data, HLO first. The ONNX graphs come in two exports
    (dynamo and torchscript) of the same model; the gallery shows the dynamo one."""
    found = []
    for path in sorted(p for folder in SAMPLE_FOLDERS for p in (SAMPLES_DIR / folder).glob("*")):
        fmt = SAMPLE_SUFFIXES.get(path.suffix)
        if fmt is None or path.name.endswith(".torchscript.onnx"):
            continue
        title = path.name.split(".")[0].replace("_", " ")
        found.append(Sample(key=f"{path.parent.name}/{path.name}", title=title, fmt=fmt,
                            size=path.stat().st_size))
    order = list(SAMPLE_SUFFIXES.values())
    return tuple(sorted(found, key=lambda sample: (order.index(sample.fmt), sample.key)))


def _teams_of(user):
    from explorer.models import Team

    if user is None or not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


class TeamField(forms.ModelChoiceField):
    """One of the user's teams (the form sets its queryset); any other id, a team of others
    or none at all, is refused with the same words, which say nothing of other teams."""

    default_error_messages = {
        "invalid_choice": "Choose one of your teams: you are not a member of that one.",
    }

    def __init__(self, **kwargs):
        super().__init__(queryset=None, required=False, empty_label="no team", **kwargs)


def pasted_text_limit() -> str:
    """What the upload form may send besides its files (Django refuses more before any view
    runs: explorer/views.py bad_request answers it)."""
    return (f"{filesizeformat(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)} "
            f"({settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes, DATA_UPLOAD_MAX_MEMORY_SIZE)")


def _sample_choices():
    return [(sample.key, sample.title) for sample in samples()]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more files (an ONNX model with its external data files): a list of uploads."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = self._clean_one
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data if item] or None
        cleaned = single(data, initial)
        return [cleaned] if cleaned else None

    def _clean_one(self, item, initial):
        try:
            return super().clean(item, initial)
        except forms.ValidationError as error:
            if getattr(error, "code", None) != "empty":
                raise
            # Django's message does not say which file, and one of several may be the empty one.
            raise forms.ValidationError(
                f"{item.name} is empty (0 bytes): choose the file that holds the graph.",
                code="empty") from None


# The largest plan file the upload form takes: one names every node of its graph once.
MAX_PLAN_FILE_BYTES = 16 * 1024 * 1024


def plan_file_of(upload, devices: list[str]) -> tuple[str, str, dict]:
    """(device, name, plan file) of an uploaded plan file: its name is the file's "name", else
    the file name less ".plan.json"; its device the file's, which must be one of `devices`.
    InputError naming the file and what is wrong."""
    where = upload.name
    if upload.size > MAX_PLAN_FILE_BYTES:
        raise InputError(f"{where}: {upload.size:,} bytes, over the {MAX_PLAN_FILE_BYTES:,} a "
                         f"plan file may take")
    try:
        data = json.loads(upload.head(upload.size) if hasattr(upload, "head") else upload.read())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InputError(f"{where}: not a JSON plan file: {error}") from None
    if not isinstance(data, dict) or data.get("format") != "fusion-explorer-plan":
        raise InputError(f"{where}: not a plan file (\"format\": \"fusion-explorer-plan\" "
                         f"expected)")
    stem = re.sub(r"(\.plan)?\.json$", "", Path(where).name)
    name = data.get("name") or re.sub(r"[^A-Za-z0-9_.-]", "-", stem).lstrip("._-")[:40]
    device = data.get("device")
    if device not in devices:
        raise InputError(f"{where}: the plan is for device {device!r}; tick it among the "
                         f"devices to apply it")
    return device, name, data


class UploadForm(forms.Form):
    graph_file = MultipleFileField(
        required=False, label="Graph file",
        help_text="An ONNX model may come with its external data files (several files, or one "
                  ".zip of them).")
    graph_text = forms.CharField(required=False, label="or paste HLO text",
                                 widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}))
    sample = forms.ChoiceField(required=False, choices=(), widget=forms.HiddenInput)
    devices = forms.MultipleChoiceField(
        choices=[(name, device.full_name) for name, device in DEVICES.items()],
        initial=["h100"], widget=forms.CheckboxSelectMultiple, label="Device models")
    strategies = forms.MultipleChoiceField(
        choices=[(name, STRATEGY_LABELS[name]) for name in STRATEGY_ORDER],
        initial=list(STRATEGY_ORDER),
        widget=forms.CheckboxSelectMultiple, label="Fusion strategies")
    # Not required: a form posted without it (a script, an older page) gets the default.
    runtime = forms.ChoiceField(
        choices=RUNTIME_CHOICES, initial=DEFAULT_RUNTIME, widget=forms.RadioSelect,
        required=False,
        label="Kernel launches",
        help_text="The cost strategy decides for this runtime; every plan is shown under both.")
    name = forms.CharField(required=False, max_length=RUN_NAME_LENGTH, label="Run name")
    plan_files = MultipleFileField(
        required=False, label="Plan files",
        help_text="Plans of this graph to apply (a plan file exported from a run of it, or "
                  "written by the CLI's --save-plans): each becomes a plan of the run, "
                  "custom:NAME, compiled and priced beside the strategies'.")
    visibility = forms.ChoiceField(choices=VISIBILITY_CHOICES, initial="private")
    team = TeamField()

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["sample"].choices = [("", "")] + _sample_choices()
        self.fields["team"].queryset = _teams_of(user)
        self.fields["graph_text"].help_text = (f"Up to {pasted_text_limit()}; choose a bigger "
                                               "graph as a file.")

    def clean(self):
        cleaned = super().clean()
        # A file the field refused (an empty one) was given all the same: its own error says
        # what is wrong with it, and "choose a file" would not.
        given = [key for key in ("graph_file", "graph_text", "sample")
                 if cleaned.get(key) or self.has_error(key)]
        if len(given) != 1:
            raise forms.ValidationError(
                "Give one graph: choose a file, paste HLO text or pick a sample.")
        if cleaned.get("visibility") == "team" and not cleaned.get("team"):
            self.add_error("team", "A run shared with a team needs the team.")
        if cleaned.get("graph_file"):
            try:
                self._bundle = graph_of(cleaned["graph_file"])
            except InputError as error:
                self.add_error("graph_file", str(error))
        self._plans = []
        for upload in cleaned.get("plan_files") or []:
            try:
                self._plans.append(plan_file_of(upload, cleaned.get("devices") or []))
            except InputError as error:
                self.add_error("plan_files", str(error))
            finally:
                upload.close()   # read: its staged copy is not kept
        return cleaned

    def plans(self) -> list[tuple[str, str, dict]]:
        """The plan files given (valid forms only): (device, name, plan file) each."""
        return self._plans

    def graph(self) -> tuple[StagedFile | bytes, str]:
        """The graph and its file name (valid forms only): the uploaded file, or the ONNX
        model among several (explorer/uploads.py), as the upload handler staged it on disk
        (explorer/graph_store.py); the bytes of pasted text or a sample."""
        data = self.cleaned_data
        if data["graph_file"]:
            return self._bundle
        if data["graph_text"]:
            text = data["graph_text"]
            suffix = ".json" if text.lstrip().startswith("{") else ".hlo"
            return text.encode(), f"pasted{suffix}"
        sample = next(s for s in samples() if s.key == data["sample"])
        return sample.path.read_bytes(), sample.path.name


class RunSettingsForm(forms.Form):
    """What the owner may change on a finished or running run: its name, tags and sharing."""
    name = forms.CharField(required=False, max_length=RUN_NAME_LENGTH, label="Name")
    # No length of its own: the tags' rules (clean_tags) say what is too long, and how.
    tags = forms.CharField(required=False, label="Tags",
                           help_text=f"Separated by commas: at most {MAX_TAGS} tags of at most "
                                     f"{MAX_TAG_LENGTH} characters.")
    visibility = forms.ChoiceField(choices=VISIBILITY_CHOICES, label="Shared with")
    team = TeamField()

    def __init__(self, *args, user=None, run=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = _teams_of(user)
        self.run = run

    @classmethod
    def for_run(cls, run, user) -> RunSettingsForm:
        return cls(user=user, run=run,
                   initial={"name": run.name, "tags": ", ".join(run.tags),
                            "visibility": run.visibility, "team": run.team_id})

    def clean_tags(self) -> list[str]:
        tags = [tag.strip() for tag in self.cleaned_data["tags"].split(",")]
        tags = list(dict.fromkeys(tag for tag in tags if tag))
        if len(tags) > MAX_TAGS:
            raise forms.ValidationError(f"At most {MAX_TAGS} tags: these are {len(tags)}.")
        long = [tag for tag in tags if len(tag) > MAX_TAG_LENGTH]
        if long:
            raise forms.ValidationError(
                f"A tag holds at most {MAX_TAG_LENGTH} characters: "
                f"'{long[0][:MAX_TAG_LENGTH]}…' has {len(long[0])}.")
        return tags

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("visibility") == "team" and not cleaned.get("team"):
            self.add_error("team", "A run shared with a team needs the team.")
        team, run = cleaned.get("team"), self.run
        if team is not None and cleaned.get("visibility") in ("team", "public") \
                and run is not None and run.graph_id is not None:
            # Sharing a run's upload with a team takes room in the team's quota.
            try:
                check_quota(run.owner, run.graph_id, run.graph.size, run.filename, team)
            except QuotaExceeded as error:
                self.add_error("team", error.message)
        return cleaned

    def apply(self, run) -> None:
        data = self.cleaned_data
        run.name, run.tags, run.visibility = data["name"], data["tags"], data["visibility"]
        run.team = data["team"]
        # `saved` too (update_fields leaves out auto_now fields not named): the run pages'
        # compare pickers are kept by it.
        run.save(update_fields=["name", "tags", "visibility", "team", "saved"])
