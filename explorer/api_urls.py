"""The JSON API's routes, mounted at /api/v1/ (see explorer/api.py and docs/api.md)."""
from django.urls import path

from explorer import api

RUN = "runs/<str:run_id>"

urlpatterns = [
    path("openapi.json", api.openapi, name="api-openapi"),
    path("runs", api.runs, name="api-runs"),
    path("cost-models", api.cost_models, name="api-cost-models"),
    path(RUN, api.run_detail, name="api-run"),
    path(f"{RUN}/status", api.run_status, name="api-run-status"),
    path(f"{RUN}/retry", api.run_retry, name="api-run-retry"),
    path(f"{RUN}/results", api.run_results, name="api-run-results"),
    path(f"{RUN}/kernels/<str:device>/<str:strategy>/<str:kernel>", api.run_kernel,
         name="api-run-kernel"),
    path(f"{RUN}/graph", api.run_graph, name="api-run-graph"),
    path(f"{RUN}/measurements", api.run_measurements, name="api-run-measurements"),
    path(f"{RUN}/measurements/<int:measurement_id>", api.run_measurement,
         name="api-run-measurement"),
    path(f"{RUN}/export.json", api.run_export_json, name="api-run-export-json"),
    path(f"{RUN}/export.csv", api.run_export_csv, name="api-run-export-csv"),
]
