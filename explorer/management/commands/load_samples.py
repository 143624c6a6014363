"""`python manage.py load_samples`: the sample graphs as public runs, so a fresh install has
results to look at. `make run` calls it on every start.

The runs belong to a "samples" user that cannot log in (no usable password) and are public, so
anyone can open them. Safe to run again: run ids are content-addressed (explorer.runs), so an
unchanged sample maps to its existing run; a new compiler version gives new runs. A sample run
that never finished (its queued job was lost with a Redis that kept nothing, say) is enqueued
again; delivering a job twice is harmless (workers.tasks.compile_run claims the run).
"""
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from compiler.fusion.explore import STRATEGIES
from explorer import runs
from explorer.models import Run

SAMPLES_USERNAME = "samples"
SAMPLES_DIR = Path(settings.BASE_DIR) / "tests" / "data" / "hlo"
# (file under SAMPLES_DIR, run name): JAX-emitted modules from small to a whole training step.
SAMPLES = (
    ("softmax.hlo", "Softmax"),
    ("layer_norm_fwd.hlo", "Layer norm (forward)"),
    ("attention_block.hlo", "Attention block"),
    ("transformer_step_bf16.hlo", "Transformer training step (bf16)"),
)
SAMPLE_DEVICES = ("h100",)
SAMPLE_TAGS = ("sample",)


def samples_user():
    """The owner of the sample runs, created on first use without a usable password."""
    user, created = get_user_model().objects.get_or_create(username=SAMPLES_USERNAME)
    if created or user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def load_samples() -> list[tuple[Run, str]]:
    """Submit every sample; returns (run, what happened) per sample: "submitted" (a new run,
    its job enqueued), "enqueued again" (an unfinished run) or the finished run's status."""
    owner = samples_user()
    loaded = []
    for filename, name in SAMPLES:
        data = (SAMPLES_DIR / filename).read_bytes()
        before = Run.objects.filter(owner=owner).count()
        run = runs.submit_run(owner, data, filename, SAMPLE_DEVICES, STRATEGIES, name=name,
                              tags=SAMPLE_TAGS, visibility=Run.PUBLIC)
        if Run.objects.filter(owner=owner).count() > before:
            outcome = "submitted"
        elif run.status in (Run.QUEUED, Run.RUNNING):
            runs.enqueue_compile(run.pk)
            outcome = "enqueued again"
        else:
            outcome = run.status
        loaded.append((run, outcome))
    return loaded


class Command(BaseCommand):
    help = "Submit the sample graphs (tests/data/hlo) as public runs of the 'samples' user."

    def handle(self, *args, **options):
        for run, outcome in load_samples():
            self.stdout.write(f"{run.name}: /r/{run.pk} ({outcome})")
