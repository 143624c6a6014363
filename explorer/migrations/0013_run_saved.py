"""Runs get `saved`: when the row was last saved through the model (created, labels changed);
the run page's compare pickers are kept by it. Existing rows get the time of the migration."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0012_run_artifact_table'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='saved',
            field=models.DateTimeField(auto_now=True),
        ),
    ]
