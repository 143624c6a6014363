from django.contrib import admin
from django.urls import path

from explorer import views

urlpatterns = [
    path("", views.index, name="explorer-index"),
    path("admin/", admin.site.urls),
]
