"""The landing page at / (explorer-index)."""
from django.test import SimpleTestCase, override_settings
from django.urls import reverse


class IndexViewTests(SimpleTestCase):
    def test_it_names_the_product_and_what_it_does(self):
        response = self.client.get(reverse("explorer-index"))

        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "explorer/index.html")
        self.assertContains(response, "<h1>Fusion Explorer</h1>", html=True)
        self.assertContains(response, "operator")

    def test_it_says_uploads_come_in_a_later_release(self):
        response = self.client.get(reverse("explorer-index"))

        self.assertContains(response, "later release")

    def test_it_links_its_stylesheet(self):
        response = self.client.get(reverse("explorer-index"))

        self.assertContains(response, "explorer/index.css")

    def test_it_refuses_a_post(self):
        response = self.client.post(reverse("explorer-index"))

        self.assertEqual(response.status_code, 405)

    # A deployment runs with DEBUG off; the debug 404 page would list every URL pattern.
    @override_settings(DEBUG=False)
    def test_an_unknown_url_is_a_plain_404_without_debug_details(self):
        response = self.client.get("/no-such-page/")

        self.assertEqual(response.status_code, 404)
        self.assertNotContains(response, "Traceback", status_code=404)
        self.assertNotContains(response, "URLconf", status_code=404)
