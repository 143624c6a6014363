"""The API's documentation page: the OpenAPI document (/api/v1/openapi.json, generated from the
operations of explorer/api.py) shown in Swagger UI, whose built files come with the
drf-spectacular-sidecar package and are served as this app's static files, so the page loads
nothing from elsewhere and runs under the site's Content-Security-Policy. Anyone may read it,
as the document itself."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET


@require_GET
def api_docs(request: HttpRequest) -> HttpResponse:
    return render(request, "explorer/api_docs.html")


@require_GET
def api_root(request: HttpRequest) -> HttpResponse:
    """/api/ leads to the docs."""
    return redirect("explorer-api-docs")
