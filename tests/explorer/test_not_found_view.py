"""The site's 404 page (handler404, explorer.views.not_found)."""
from django.contrib.auth.models import AnonymousUser
from django.test import RequestFactory, override_settings
from django.urls import Resolver404, reverse

from explorer.views import not_found
from tests.explorer.access import AccessTestCase

# Django's own exceptions, whose names must never reach a visitor.
INTERNAL_NAMES = ("Resolver404", "Http404", "Traceback", "URLconf", "tried")


# A deployment runs with DEBUG off; with it on, Django shows its debug page instead.
@override_settings(DEBUG=False)
class NotFoundViewTests(AccessTestCase):
    def assert_plain_404(self, response, sentence):
        self.assertEqual(response.status_code, 404)
        self.assertTemplateUsed(response, "404.html")
        self.assertContains(response, sentence, status_code=404, html=True)
        for name in INTERNAL_NAMES:
            self.assertNotContains(response, name, status_code=404)

    def test_an_unknown_address_is_the_sites_page_with_no_exception_name(self):
        for path in ("/no-such-page", "/no/such/page/", "/r/", "/runs/x/y", "/teams/x"):
            with self.subTest(path=path):
                self.assert_plain_404(
                    self.client.get(path),
                    f'<p id="not-found">There is nothing at <code>{path}</code>.</p>')

    def test_a_missing_run_says_so_in_plain_words(self):
        self.client.force_login(self.owner)
        response = self.client.get(reverse("explorer-run", args=["x" * 22]))

        self.assert_plain_404(response, f'<p id="not-found">There is nothing at '
                                        f'<code>/r/{"x" * 22}</code>: No such run.</p>')

    def test_a_page_asked_for_with_a_trailing_slash_is_sent_to_the_page(self):
        for name in ("explorer-gallery", "explorer-history", "explorer-cost-models"):
            with self.subTest(page=name):
                response = self.client.get(reverse(name) + "/?page=2")
                self.assertRedirects(response, reverse(name) + "?page=2",
                                     fetch_redirect_response=False)

    def test_the_gallery_with_a_trailing_slash_shows_the_gallery(self):
        response = self.client.get("/gallery/", follow=True)

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/gallery.html")

    def test_an_address_of_two_leading_slashes_is_not_sent_to_another_site(self):
        # The test client would read "//gallery/" as the host "gallery": a request made by hand.
        request = RequestFactory().get("/")
        request.path = request.path_info = "//gallery/"
        request.user = AnonymousUser()

        response = not_found(request, Resolver404({"path": "/gallery/"}))

        self.assertEqual(response.status_code, 404)
        self.assertNotIn("Location", response)
