"""Thin function views: they read the request and render; rules live on models or in compiler/."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    return render(request, "explorer/index.html")
