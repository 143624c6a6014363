"""Configures the Celery app for the workers and nothing else: the app and its settings are the
web app's (explorer/queues.py: Django's CELERY_* names), which sends jobs by name; here it
learns the tasks and the workers' signals."""
import os

import django

from explorer.queues import app

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")
# Tasks import the explorer's models, so Django must be set up before workers.tasks is imported,
# also in a process that only sends tasks (a script, a shell); a second call does nothing.
django.setup()

# workers/ is not a Django app, so name it: the default list comes from INSTALLED_APPS.
app.autodiscover_tasks(["workers"])

# gpu-queue workers announce themselves in Redis (workers/presence.py), every worker sweeps for
# lost jobs (workers/sweeper.py), and a task's log lines carry its id and name (workers/logs.py).
from workers import logs, presence, sweeper  # noqa: E402  (needs Django set up)

presence.connect_signals()
sweeper.connect_signals()
logs.connect_signals()
