"""`python manage.py prune_graphs [--grace-hours N]`: remove from the graph store what no run
needs (explorer/graph_store.py `prune`): the uploads of runs that failed more than
FAILED_RUN_UPLOADS_KEPT_S ago (the workers' sweeper does that too), rows no run points at with
their files, files no row names, and temporary files of uploads cut off more than a day ago.
Safe to run at any time, e.g. daily from cron: nothing younger than the grace period (an hour)
is touched."""
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError

from explorer.graph_store import prune


class Command(BaseCommand):
    help = "Remove the graph store's files and rows that no run needs."

    def add_arguments(self, parser):
        parser.add_argument("--grace-hours", type=float, default=1.0,
                            help="leave alone what is younger than this (default 1 hour)")

    def handle(self, *args, grace_hours: float, **options):
        if grace_hours < 0:
            raise CommandError("--grace-hours must not be negative")
        pruned = prune(timedelta(hours=grace_hours))
        self.stdout.write(", ".join(f"{count} {what}" for what, count in pruned.items())
                          + " removed.")
