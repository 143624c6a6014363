"""The public gallery: every finished public run, for anyone, logged in or not. The sample
runs (`manage.py load_samples`, owned by the "samples" user) come first, then the others,
newest first; each card links to its run page, whose exports are open to anyone too (the API's
export routes take no credentials for a public run).

Cards show each device's best plan from a cache kept per run (explorer/documents.py best_totals),
so the page never reads artifacts it has read before, whatever the runs weigh."""
from django.core.paginator import Paginator
from django.db.models import Case, IntegerField, Value, When
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from explorer.management.commands.load_samples import SAMPLES_USERNAME
from explorer.models import Run
from explorer.documents import best_totals

GALLERY_PAGE_SIZE = 24
# What a card shows of a run; the artifact and the graph stay in the database.
CARD_FIELDS = ("id", "name", "filename", "tags", "devices", "strategies", "status", "created",
               "finished", "plans_changed", "compiler_version", "owner__username")


def public_runs():
    """The finished public runs, samples first, then newest first."""
    samples_first = Case(When(owner__username=SAMPLES_USERNAME, then=Value(0)), default=Value(1),
                         output_field=IntegerField())
    return (Run.objects.filter(visibility=Run.PUBLIC, status=Run.DONE)
            .select_related("owner").only(*CARD_FIELDS)
            .order_by(samples_first, "-created"))


@require_GET
def gallery(request: HttpRequest) -> HttpResponse:
    page = Paginator(public_runs(), GALLERY_PAGE_SIZE).get_page(request.GET.get("page"))
    runs = list(page)
    best = best_totals(runs)
    cards = [{"run": run, "best": best.get(run.pk, []),
              "sample": run.owner.username == SAMPLES_USERNAME} for run in runs]
    return render(request, "explorer/gallery.html", {"page": page, "cards": cards})
