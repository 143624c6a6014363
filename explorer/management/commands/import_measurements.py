"""`python manage.py import_measurements DIR`: a GPU campaign's measured plans
(benchmarks/gpu_campaign.py's folder) as measurements of the runs of the same graph, device and
compiler version, labelled with the GPU, driver, clocks and date they came from
(explorer/campaigns.py). Safe to repeat: a plans file already imported into a run adds nothing."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from explorer.campaigns import CampaignError, import_campaign


class Command(BaseCommand):
    help = ("Import a GPU campaign's folder (benchmarks/gpu_campaign.py --out DIR) into the runs "
            "of the same graph, device and compiler version as measurements; says what matched "
            "and what did not.")

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path, help="the campaign's folder, e.g. "
                                                      "benchmarks/results/gpu-campaign-h200")

    def handle(self, *args, folder: Path, **options):
        if not folder.is_dir():
            raise CommandError(f"{folder}: no such folder")
        try:
            report = import_campaign(folder)
        except CampaignError as error:
            raise CommandError(str(error)) from None
        for line in report.lines:
            self.stdout.write(line)
        self.stdout.write(f"{len(report.added)} measurement(s) added.")
