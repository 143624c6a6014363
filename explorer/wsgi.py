"""WSGI entry point for deployment servers (gunicorn explorer.wsgi)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")

application = get_wsgi_application()
