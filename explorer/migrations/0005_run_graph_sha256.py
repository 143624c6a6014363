"""Run.graph_sha256: the hash runs of the same graph are found by, filled in for the runs
stored before it existed (a run at a time, its bytes read once)."""
from django.db import migrations, models


def fill_in(apps, schema_editor):
    from explorer.models import graph_sha256

    Run = apps.get_model("explorer", "Run")
    for pk in list(Run.objects.filter(graph_sha256="").values_list("pk", flat=True)):
        run = Run.objects.only("graph_bytes", "filename").get(pk=pk)
        Run.objects.filter(pk=pk).update(
            graph_sha256=graph_sha256(bytes(run.graph_bytes), run.filename))


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0004_job_stages'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='graph_sha256',
            field=models.CharField(blank=True, db_index=True, editable=False, max_length=64),
        ),
        migrations.RunPython(fill_in, migrations.RunPython.noop),
    ]
