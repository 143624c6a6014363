"""What the run page, the plan panel and the kernel page show of XLA:GPU's own plan (the xla-gpu
strategy): XLA's name for each kernel beside ours, that the CUDA shown is ours (generated for
XLA's grouping), and all of XLA's message when it refused the module."""
import unittest

from django.urls import reverse
from django.utils.html import escape

from explorer.models import Run
from explorer.presenters import XLA_GPU_CUDA_NOTE
from tests.explorer.access import AccessTestCase, softmax_artifact
from tests.explorer.xla_gpu_plans import (HAVE_PLUGIN, NO_PLUGIN, REFUSAL, refused_artifact,
                                          xla_gpu_artifact)


class XlaGpuPagesTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        super().setUpTestData()
        cls.refused = cls.make_done_run("f" * 22, Run.TEAM,
                                        artifact=refused_artifact(softmax_artifact()))
        if HAVE_PLUGIN:
            cls.done = cls.make_done_run("x" * 22, Run.TEAM, artifact=xla_gpu_artifact())
            cls.plan = cls.done.artifact["devices"]["h100"]["strategies"]["xla-gpu"]

    def get(self, url):
        self.client.force_login(self.owner)
        return self.client.get(url)

    def panel(self, run, strategy):
        return self.get(reverse("explorer-plan-panel", args=[run.pk, "h100", strategy]))

    @unittest.skipUnless(HAVE_PLUGIN, NO_PLUGIN)
    def test_the_kernel_table_names_xlas_kernel_beside_ours(self):
        response = self.panel(self.done, "xla-gpu")

        self.assertEqual(response.status_code, 200)
        self.assertContains(response, ">XLA kernel</th>")
        self.assertTrue(self.plan["kernels"])
        for kernel in self.plan["kernels"]:
            self.assertIsNotNone(kernel["xla_name"])
            url = reverse("explorer-kernel", args=[self.done.pk, "h100", "xla-gpu",
                                                   kernel["name"]])
            self.assertRegex(response.content.decode(),
                             rf'href="{url}"\s*>{kernel["name"]}</a></td>\s*'
                             rf'<td class="kernels__xla">{kernel["xla_name"]}</td>')

    @unittest.skipUnless(HAVE_PLUGIN, NO_PLUGIN)
    def test_the_xla_gpu_panel_says_the_cuda_is_ours_for_xlas_grouping(self):
        self.assertContains(self.panel(self.done, "xla-gpu"), escape(XLA_GPU_CUDA_NOTE))

    @unittest.skipUnless(HAVE_PLUGIN, NO_PLUGIN)
    def test_our_plans_panels_have_no_xla_column_and_no_note(self):
        response = self.panel(self.done, "xla")

        self.assertContains(response, "Plan — xla (")
        self.assertNotContains(response, "XLA kernel")
        self.assertNotContains(response, escape(XLA_GPU_CUDA_NOTE))

    @unittest.skipUnless(HAVE_PLUGIN, NO_PLUGIN)
    def test_the_kernel_page_names_xlas_kernel_and_says_whose_cuda_it_shows(self):
        kernel = self.plan["kernels"][0]
        response = self.get(reverse("explorer-kernel", args=[self.done.pk, "h100", "xla-gpu",
                                                             kernel["name"]]))

        self.assertEqual(response.status_code, 200)
        self.assertRegex(response.content.decode(),
                         rf'<h1>{kernel["name"]}\s*<span class="kernel__xla-name"[^>]*>'
                         rf'XLA: {kernel["xla_name"]}</span>')
        self.assertContains(response, escape(XLA_GPU_CUDA_NOTE))

    def test_our_kernels_pages_have_neither(self):
        response = self.get(reverse("explorer-kernel", args=[self.refused.pk, "h100", "cost",
                                                             "stitch-regional.0"]))

        self.assertEqual(response.status_code, 200)
        self.assertNotContains(response, "kernel__xla-name")
        self.assertNotContains(response, escape(XLA_GPU_CUDA_NOTE))

    def test_the_comparison_gives_all_of_xlas_message_when_it_refused_the_module(self):
        response = self.get(reverse("explorer-run", args=[self.refused.pk]))

        # Every line, the caret's spaces kept (the cell keeps them: static/explorer/run.css).
        self.assertContains(response, f"not available: {escape(REFUSAL)}</td>", count=2)

    def test_the_refused_plans_panel_says_why_with_all_of_xlas_message(self):
        response = self.panel(self.refused, "xla-gpu")

        self.assertContains(response, "Plan — xla-gpu (0 kernels)")
        self.assertContains(response, '<pre class="card plan__unavailable">not available: '
                                      f"{escape(REFUSAL)}</pre>")
        self.assertNotContains(response, escape(XLA_GPU_CUDA_NOTE))
