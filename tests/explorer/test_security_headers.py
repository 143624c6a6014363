"""The security headers every response carries (Content-Security-Policy, X-Frame-Options,
Referrer-Policy, nosniff), and templates that keep to the policy: no inline script, no inline
event handler, no style attribute (tests/browser/test_csp.py checks the pages in Chromium)."""
import re
from pathlib import Path

from django.urls import reverse

from tests.explorer.access import AccessTestCase

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


class SecurityHeaderTests(AccessTestCase):
    def assert_headers(self, response):
        policy = response["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        self.assertEqual(directives["script-src"], "'self'")
        self.assertEqual(directives["style-src"], "'self'")
        self.assertEqual(directives["object-src"], "'none'")
        self.assertEqual(directives["frame-ancestors"], "'none'")
        self.assertNotIn("unsafe", policy)
        self.assertEqual(response["X-Frame-Options"], "DENY")
        self.assertEqual(response["Referrer-Policy"], "same-origin")
        self.assertEqual(response["X-Content-Type-Options"], "nosniff")

    def test_pages_api_answers_and_errors_all_carry_them(self):
        run = self.make_done_run(visibility="public")
        self.client.force_login(self.owner)
        for url, status in ((reverse("explorer-index"), 200),
                            (reverse("explorer-run", args=[run.pk]), 200),
                            (reverse("api-run", args=[run.pk]), 200),
                            (reverse("explorer-run", args=["x" * 22]), 404),
                            ("/api/v1/nowhere", 404),
                            (reverse("login"), 200)):
            response = self.client.get(url)
            self.assertEqual(response.status_code, status, url)
            self.assert_headers(response)


def test_no_template_has_inline_script_handlers_or_style_attributes():
    inline_script = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
    handler = re.compile(r"\son[a-z]+\s*=", re.I)
    style = re.compile(r"\sstyle\s*=|<style", re.I)
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        text = path.read_text()
        for name, pattern in (("inline <script>", inline_script), ("event handler", handler),
                              ("style attribute", style)):
            found += [f"{path.relative_to(TEMPLATES)}: {name}: {m.group(0)!r}"
                      for m in pattern.finditer(text)]
    assert found == []
