"""Plotly's browser bundle as the static file plotly/plotly.min.js, from the pinned `plotly`
package rather than a CDN: deployments and test machines may have no internet.

Only the bundle: the package's data folder also holds a 4.8 MB Jupyter widget bundle, sample
datasets and chart templates, which no page uses and which collectstatic would otherwise copy,
hash and compress (brotli alone takes about 13 s for each 4-5 MB script).
"""
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.utils import matches_patterns
from django.core.files.storage import FileSystemStorage

PREFIX = "plotly"
BUNDLE = "plotly.min.js"


class PlotlyBundleFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=Path(plotly.__file__).parent / "package_data")
        # collectstatic and WhiteNoise put the files a finder lists under its storage's prefix.
        self.storage.prefix = PREFIX

    def find(self, path, find_all=False, **kwargs):
        # Like Django's own finders: a list when nothing is found, even when one match is asked.
        if path != f"{PREFIX}/{BUNDLE}":
            return []
        match = self.storage.path(BUNDLE)
        return [match] if find_all else match

    def list(self, ignore_patterns):
        if not matches_patterns(BUNDLE, ignore_patterns or []):
            yield BUNDLE, self.storage
