"""Runs' artifacts move out of the runs' table into RunArtifact, one row per done run, so
that listing runs never reads (or, in SQLite, walks past) megabytes of artifact."""

import django.db.models.deletion
from django.db import migrations, models


def move_artifacts(apps, schema_editor):
    Run = apps.get_model("explorer", "Run")
    RunArtifact = apps.get_model("explorer", "RunArtifact")
    done = Run.objects.filter(artifact__isnull=False).values_list("pk", flat=True)
    for pk in done.iterator():
        # One artifact at a time: a database of big runs need not fit in memory.
        data = Run.objects.filter(pk=pk).values_list("artifact", flat=True).get()
        RunArtifact.objects.create(run_id=pk, data=data)


def restore_artifacts(apps, schema_editor):
    Run = apps.get_model("explorer", "Run")
    RunArtifact = apps.get_model("explorer", "RunArtifact")
    for pk in RunArtifact.objects.values_list("pk", flat=True).iterator():
        data = RunArtifact.objects.filter(pk=pk).values_list("data", flat=True).get()
        Run.objects.filter(pk=pk).update(artifact=data)


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0011_invites_and_signup_attempts'),
    ]

    operations = [
        migrations.CreateModel(
            name='RunArtifact',
            fields=[
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                             primary_key=True, related_name='+',
                                             serialize=False, to='explorer.run')),
                ('data', models.JSONField()),
            ],
        ),
        migrations.RunPython(move_artifacts, restore_artifacts),
        migrations.RemoveField(
            model_name='run',
            name='artifact',
        ),
    ]
