"""Uploaded graphs' bytes move out of the database into the graph store's files
(explorer/graph_store.py, named by their SHA-256, GRAPH_STORE_DIR): each GraphBlob row's bytes
become its file, then the column goes. One row at a time, so a database of big uploads need not
fit in memory. Reversible: the files' bytes go back into the rows (the files stay)."""

from django.core.files.base import ContentFile
from django.db import migrations, models

from explorer.graph_store import file_name, graph_storage


def blobs_to_files(apps, schema_editor):
    GraphBlob = apps.get_model("explorer", "GraphBlob")
    storage = graph_storage()
    for key in GraphBlob.objects.values_list("pk", flat=True).iterator():
        data = GraphBlob.objects.filter(pk=key).values_list("data", flat=True).get()
        storage.save(file_name(key), ContentFile(bytes(data)))
        # Emptied as it goes: the column's last two steps below then copy no big rows.
        GraphBlob.objects.filter(pk=key).update(data=b"")


def files_to_blobs(apps, schema_editor):
    GraphBlob = apps.get_model("explorer", "GraphBlob")
    storage = graph_storage()
    for key in GraphBlob.objects.values_list("pk", flat=True).iterator():
        with storage.open(file_name(key), "rb") as file:
            GraphBlob.objects.filter(pk=key).update(data=file.read())


class Migration(migrations.Migration):

    dependencies = [
        ('explorer', '0013_run_saved'),
    ]

    operations = [
        migrations.RunPython(blobs_to_files, files_to_blobs),
        # A default for the column while it goes, so that going back can add it to rows
        # that exist (and files_to_blobs then fills it).
        migrations.AlterField(
            model_name='graphblob',
            name='data',
            field=models.BinaryField(default=b''),
        ),
        migrations.RemoveField(
            model_name='graphblob',
            name='data',
        ),
    ]
