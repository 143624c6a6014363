"""ASGI entry point for deployment servers (uvicorn explorer.asgi:application)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "explorer.settings")

application = get_asgi_application()
