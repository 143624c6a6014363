"""`manage.py load_samples`: the sample graphs as public runs of a user that cannot log in,
safe to run on every start (explorer/management/commands/load_samples.py)."""
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command

from compiler.fusion.explore import STRATEGIES
from explorer import runs
from explorer.management.commands.load_samples import SAMPLES, SAMPLES_USERNAME
from explorer.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch):
    """The ids enqueued for compiling (no broker in these tests)."""
    sent = []
    monkeypatch.setattr(runs, "enqueue_compile", sent.append)
    return sent


def load(capture) -> str:
    out = StringIO()
    with capture(execute=True):
        call_command("load_samples", stdout=out)
    return out.getvalue()


def test_every_sample_becomes_a_public_queued_run_of_the_samples_user(
        enqueued, django_capture_on_commit_callbacks):
    output = load(django_capture_on_commit_callbacks)
    user = get_user_model().objects.get(username=SAMPLES_USERNAME)
    assert not user.has_usable_password()
    sample_runs = Run.objects.filter(owner=user)
    assert sorted(run.filename for run in sample_runs) == sorted(name for name, _ in SAMPLES)
    for run in sample_runs:
        assert run.visibility == Run.PUBLIC and run.can_view(AnonymousUser())
        assert run.status == Run.QUEUED
        assert run.devices == ["h100"] and run.strategies == list(STRATEGIES)
        assert run.tags == ["sample"]
        assert f"{run.name}: /r/{run.pk} (submitted)" in output
    assert sorted(enqueued) == sorted(run.pk for run in sample_runs)


def test_loading_again_adds_no_run_and_enqueues_only_unfinished_ones(
        enqueued, django_capture_on_commit_callbacks):
    load(django_capture_on_commit_callbacks)
    ids = set(Run.objects.values_list("pk", flat=True))
    done, failed, *unfinished = Run.objects.order_by("pk")
    Run.objects.filter(pk=done.pk).update(status=Run.DONE)
    Run.objects.filter(pk=failed.pk).update(status=Run.FAILED)
    enqueued.clear()

    output = load(django_capture_on_commit_callbacks)

    assert set(Run.objects.values_list("pk", flat=True)) == ids
    assert sorted(enqueued) == sorted(run.pk for run in unfinished)
    assert f"/r/{done.pk} (done)" in output and f"/r/{failed.pk} (failed)" in output
    assert output.count("(enqueued again)") == len(unfinished)


def test_an_existing_samples_user_loses_a_usable_password(
        enqueued, django_capture_on_commit_callbacks):
    get_user_model().objects.create_user(SAMPLES_USERNAME, password="guessable")
    load(django_capture_on_commit_callbacks)
    assert not get_user_model().objects.get(username=SAMPLES_USERNAME).has_usable_password()
