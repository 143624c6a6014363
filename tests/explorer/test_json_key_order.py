"""Pages, exports and API answers list devices, plans, a kernel's projected breakdown and its
ptxas resources in the compiler's order, whatever order the database gives back an object's
keys in: PostgreSQL's jsonb keeps them shortest first ("xla" before "unfused", "l4" before
"a100"), where SQLite keeps the text as written. Here the stored objects are written in reverse,
which SQLite keeps; tests/explorer/test_on_postgresql.py runs this module on PostgreSQL too."""
import csv
import io

from django.urls import reverse

from explorer import presenters
from explorer.models import Run, RunArtifact
from tests.explorer.access import DEVICES, STRATEGIES, AccessTestCase, softmax_artifact


def reversed_keys(mapping: dict) -> dict:
    return dict(reversed(mapping.items()))


def stored_in_reverse(artifact: dict) -> dict:
    """The artifact with its devices and each device's plans in reverse order."""
    return {**artifact, "devices": reversed_keys({
        device: {**result, "strategies": reversed_keys(result["strategies"])}
        for device, result in artifact["devices"].items()})}


class KeyOrderTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.done = cls.make_done_run()
        artifact = {key: value for key, value in softmax_artifact().items() if key != "sources"}
        RunArtifact.objects.filter(run=cls.done).update(data=stored_in_reverse(artifact))

    def setUp(self):
        self.client.force_login(self.owner)

    def test_a_runs_artifact_lists_devices_by_name_and_plans_in_exploration_order(self):
        artifact = Run.objects.get(pk=self.done.pk).artifact

        self.assertEqual(list(artifact["devices"]), DEVICES)
        for result in artifact["devices"].values():
            self.assertEqual(list(result["strategies"]), STRATEGIES)

    def test_the_csv_export_and_the_run_page_follow_that_order(self):
        export = self.client.get(reverse("api-run-export-csv", args=[self.done.pk]))
        rows = list(csv.reader(io.StringIO(export.content.decode())))[1:]
        pairs = list(dict.fromkeys((row[0], row[1]) for row in rows))
        self.assertEqual(pairs, [(device, strategy) for device in DEVICES
                                 for strategy in STRATEGIES])

        page = self.client.get(reverse("explorer-run", args=[self.done.pk])).content.decode()
        tabs = [page.index(f'data-tab-panel="device" data-tab="{device}"') for device in DEVICES]
        self.assertEqual(tabs, sorted(tabs))

    def test_a_kernels_breakdown_and_resources_are_listed_in_the_compilers_order(self):
        kernel = softmax_artifact()["devices"]["h100"]["strategies"]["cost"]["kernels"][0]
        resources = next(iter(softmax_artifact()["sources"].values()))["resources"]
        shuffled = {**kernel, "projected": reversed_keys(kernel["projected"])}

        self.assertEqual(presenters.breakdown_rows(shuffled), presenters.breakdown_rows(kernel))
        self.assertEqual(presenters.resource_rows(reversed_keys(resources)),
                         presenters.resource_rows(resources))
        self.assertEqual(presenters.resource_rows(resources)[0][0], "registers")
