"""explorer/documents.py: gzip streams spliced around a part compressed once, and the cache of
big documents."""
import gzip
import threading
import time

from django.test import SimpleTestCase

from explorer.documents import Fragment, cached_gzip, gzip_around


class GzipAroundTests(SimpleTestCase):
    def test_the_stream_decompresses_to_head_middle_and_tail(self):
        middle = "<table>" + "<tr><td>kernel</td><td>1.25 µs</td></tr>" * 5000 + "</table>"
        head, tail = "<html><body><h1>Run «élan»</h1>", "<p>tail</p></body></html>"

        packed = gzip_around(head, Fragment.of(middle), tail)

        self.assertEqual(gzip.decompress(packed), (head + middle + tail).encode())

    def test_an_empty_head_tail_or_middle_still_makes_a_valid_stream(self):
        for head, middle, tail in (("", "middle", ""), ("head", "", "tail"), ("", "", "")):
            with self.subTest(head=head, middle=middle, tail=tail):
                packed = gzip_around(head, Fragment.of(middle), tail)
                self.assertEqual(gzip.decompress(packed), (head + middle + tail).encode())

    def test_the_stored_part_is_compressed(self):
        middle = Fragment.of("<tr><td>same row</td></tr>" * 10000)

        self.assertLess(len(middle.deflated), len(middle.raw) / 20)
        self.assertEqual(middle.text, "<tr><td>same row</td></tr>" * 10000)


class CachedGzipTests(SimpleTestCase):
    def test_it_builds_once_and_then_answers_from_the_cache(self):
        builds = []

        def build() -> bytes:
            builds.append(1)
            return b'{"a": 1}'

        first, second = cached_gzip("doc", build), cached_gzip("doc", build)

        self.assertEqual((gzip.decompress(first), second), (b'{"a": 1}', first))
        self.assertEqual(len(builds), 1)

    def test_threads_asking_at_once_wait_for_one_build(self):
        builds = []

        def build() -> bytes:
            builds.append(1)
            time.sleep(0.2)
            return b"document"

        answers = []
        threads = [threading.Thread(target=lambda: answers.append(cached_gzip("slow", build)))
                   for _ in range(5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual(len(builds), 1)
        self.assertEqual({gzip.decompress(answer) for answer in answers}, {b"document"})
