"""WSGI entry point for deployment servers (gunicorn explorer.wsgi)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")

application = get_wsgi_application()

# Load the URL conf now, and with it every view and the compiler modules they import, and
# build its reverse lookup, so a server process pays for that (about a second) as it starts
# instead of in its first request.
from django.urls import reverse  # noqa: E402

reverse("explorer-index")
