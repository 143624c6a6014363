"""Runs' graph bytes move out of the runs' table into GraphBlob, keyed by their SHA-256:
each existing run's bytes become a blob (equal uploads share one) before the column goes."""

import hashlib

import django.db.models.deletion
from django.db import migrations, models


def move_graphs(apps, schema_editor):
    Run = apps.get_model("explorer", "Run")
    GraphBlob = apps.get_model("explorer", "GraphBlob")
    for pk in Run.objects.values_list("pk", flat=True).iterator():
        # One run's bytes at a time: a database of big uploads need not fit in memory.
        data = bytes(Run.objects.filter(pk=pk).values_list("graph_bytes", flat=True).get())
        key = hashlib.sha256(data).hexdigest()
        if not GraphBlob.objects.filter(pk=key).exists():
            GraphBlob.objects.create(sha256=key, size=len(data), data=data)
        Run.objects.filter(pk=pk).update(graph_id=key)


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0008_job_enqueued_at'),
    ]

    operations = [
        migrations.CreateModel(
            name='GraphBlob',
            fields=[
                ('sha256', models.CharField(editable=False, max_length=64, primary_key=True,
                                            serialize=False)),
                ('size', models.PositiveBigIntegerField()),
                ('data', models.BinaryField()),
                ('created', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name='run',
            name='graph',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT,
                                    related_name='runs', to='explorer.graphblob'),
        ),
        migrations.RunPython(move_graphs, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='run',
            name='graph_bytes',
        ),
        migrations.AlterField(
            model_name='run',
            name='graph',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                    related_name='runs', to='explorer.graphblob'),
        ),
    ]
