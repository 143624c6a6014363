"""Runs get `runtime`: how their plans' kernels are launched (a CUDA graph replay or stream
launches, compiler/target/launch.py). Runs compiled before were priced with one launch constant
in every kernel; they read as CUDA-graph runs, the default, and their pages say their figures
have no launch terms until they are compiled again."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0014_graph_files'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='runtime',
            field=models.CharField(choices=[('graph', 'CUDA graph'),
                                            ('stream', 'stream launches')],
                                   default='graph', max_length=10),
        ),
    ]
