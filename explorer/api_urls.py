"""The JSON API's routes, mounted at /api/v1/: those its operations declare in explorer/api.py
(see docs/api.md)."""
from explorer.api import routes

urlpatterns = routes()
