"""The shared base of the view tests: an owner, a teammate and a stranger, and runs to show them.

A finished run is made directly from an artifact that compiler.stages.pipeline.compile_graph
produced (compiled once per test process), without Celery.
"""
from functools import cache
from pathlib import Path

from django.contrib.auth.models import User
from django.test import TestCase

from compiler.stages.pipeline import compile_graph
from explorer.models import KernelSource, Membership, Run, Team

DATA = Path(__file__).resolve().parents[1] / "data"
SOFTMAX = DATA / "hlo" / "softmax.hlo"
DEVICES = ["a100", "h100"]
STRATEGIES = ["unfused", "xla", "stitch", "cost"]


@cache
def softmax_artifact() -> dict:
    return compile_graph(SOFTMAX.read_bytes(), SOFTMAX.name, DEVICES, STRATEGIES)


class AccessTestCase(TestCase):
    """owner and teammate are in team "kernels"; stranger is in no team."""

    @classmethod
    def setUpTestData(cls):
        cls.owner = User.objects.create_user("owner", password="owner-password")
        cls.teammate = User.objects.create_user("teammate", password="teammate-password")
        cls.stranger = User.objects.create_user("stranger", password="stranger-password")
        cls.team = Team.objects.create(name="kernels")
        Membership.objects.create(team=cls.team, user=cls.owner)
        Membership.objects.create(team=cls.team, user=cls.teammate)

    @classmethod
    def make_run(cls, run_id="r" * 22, visibility=Run.PRIVATE, status=Run.QUEUED,
                 owner: User | None = None, **fields) -> Run:
        team = cls.team if visibility == Run.TEAM else None
        return Run.objects.create(
            id=run_id, owner=owner or cls.owner, team=team, visibility=visibility, status=status,
            filename=SOFTMAX.name, graph_bytes=SOFTMAX.read_bytes(), devices=DEVICES,
            strategies=STRATEGIES, compiler_version="test", **fields)

    @classmethod
    def make_done_run(cls, run_id="d" * 22, visibility=Run.PRIVATE,
                      artifact: dict | None = None, owner: User | None = None) -> Run:
        """A finished run of softmax.hlo on two devices, with its kernels' sources; `artifact`:
        an edited copy of softmax_artifact() to store instead; `owner`: by default the
        class's."""
        artifact = dict(artifact or softmax_artifact())
        sources = artifact.pop("sources")
        run = cls.make_run(run_id, visibility, Run.DONE, owner, artifact=artifact,
                           name="softmax")
        KernelSource.objects.bulk_create(KernelSource.from_artifact(run.pk, key, source)
                                         for key, source in sources.items())
        return run
