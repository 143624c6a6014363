"""Static files as a deployment serves them (DEBUG off): collected by `manage.py collectstatic`
(`make run` does it) under content-hashed names with gzip and brotli copies, then served by
WhiteNoise with a far-future immutable lifetime, in the smallest encoding the client accepts.

The other tests link static files by their plain names (tests/conftest.py says why); these
collect them with the project's own storage into a temporary STATIC_ROOT and fetch one through
the whole middleware stack. Plotly's bundle is left out of that collection: compressing it
alone takes about 15 s, and it is collected and served the same way as the files here.
"""
import gzip
import hashlib
import re
import shutil
import tempfile
from pathlib import Path

import brotli
from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.templatetags.static import static
from django.test import SimpleTestCase, override_settings

from explorer import settings as project_settings

ASSET = "explorer/base.css"
ONE_YEAR_S = 365 * 24 * 3600


class CollectedStaticFileTests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        static_root = Path(tempfile.mkdtemp(prefix="static-"))
        cls.addClassCleanup(shutil.rmtree, static_root)
        cls.enterClassContext(override_settings(STATIC_ROOT=static_root,
                                                STORAGES=project_settings.STORAGES))
        call_command("collectstatic", interactive=False, verbosity=0)
        cls.url = static(ASSET)
        cls.content = Path(staticfiles_storage.path(staticfiles_storage.stored_name(ASSET))) \
            .read_bytes()

    def fetch(self, accept_encoding: str | None = None):
        headers = {"Accept-Encoding": accept_encoding} if accept_encoding else {}
        response = self.client.get(self.url, headers=headers)
        # Read to its end, the test client closes the file with Django's end-of-request signal
        # kept off the database; closing it again ourselves sent that signal, which touches a
        # connection an earlier test in this process left (no database here: an error).
        self.addCleanup(response.getvalue)
        self.assertEqual(response.status_code, 200)
        return response

    def test_pages_link_it_by_a_name_made_from_a_hash_of_its_content(self):
        digest = hashlib.md5(self.content).hexdigest()[:12]

        self.assertEqual(self.url, f"{settings.STATIC_URL}explorer/base.{digest}.css")

    def test_it_is_cached_for_a_year_or_more_without_revalidation(self):
        cache_control = self.fetch()["Cache-Control"]

        self.assertIn("immutable", cache_control)
        max_age = int(re.search(r"max-age=(\d+)", cache_control).group(1))
        self.assertGreaterEqual(max_age, ONE_YEAR_S)

    def assert_compressed(self, accept: str, encoding: str, decompress) -> None:
        """Asked for with `accept`, the file comes in `encoding`, smaller, and decompresses
        to itself."""
        response = self.fetch(accept)
        body = response.getvalue()

        self.assertEqual(response["Content-Encoding"], encoding)
        self.assertEqual(decompress(body), self.content)
        self.assertLess(len(body), len(self.content))

    def test_a_client_that_accepts_gzip_gets_it_gzipped_and_smaller(self):
        self.assert_compressed("gzip, deflate", "gzip", gzip.decompress)

    def test_a_client_that_accepts_brotli_gets_it_brotli_compressed_and_smaller(self):
        self.assert_compressed("gzip, deflate, br", "br", brotli.decompress)

    def test_a_client_that_accepts_no_compression_gets_the_file_as_it_is(self):
        response = self.fetch()

        self.assertFalse(response.has_header("Content-Encoding"))
        self.assertEqual(response.getvalue(), self.content)


class StaticFileNamesTests(SimpleTestCase):
    def test_every_static_file_a_template_links_exists(self):
        """With DEBUG off a page that links a missing file fails with a server error: the
        manifest has no hashed name for it."""
        linked = {name for template in Path(settings.BASE_DIR, "templates").rglob("*.html")
                  for name in re.findall(r"{% static '([^']+)' %}", template.read_text())}

        self.assertIn("explorer/fusion_view.js", linked)
        self.assertEqual({name for name in linked if finders.find(name) is None}, set())
