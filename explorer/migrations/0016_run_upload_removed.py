"""A run may let go of its upload: a failed run's, FAILED_RUN_UPLOADS_KEPT_S after it failed
(Run.remove_failed_uploads). Its `graph` is then null and `upload_removed` says when; every run
before keeps its graph."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0015_run_runtime'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='upload_removed',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='run',
            name='graph',
            field=models.ForeignKey(blank=True, null=True,
                                    on_delete=django.db.models.deletion.PROTECT,
                                    related_name='runs', to='explorer.graphblob'),
        ),
    ]
