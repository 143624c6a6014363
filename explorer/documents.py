"""What the API and the run page send of finished runs, kept ready to send.

The big documents (a run's /results, its exports) are serialised and gzipped once and kept in
Django's cache as bytes; a request for one sends those bytes as they are to a client that
accepts gzip (browsers, curl --compressed, Python's requests), and decompresses them for one
that does not (milliseconds for a few MB). The run page's results, most of its HTML, are kept
compressed too, and spliced between the parts rendered for each request (`Fragment`).

Every entry's key names the run, its results stamp (created and finished times: a recompiled
run gets new keys), the compiler version that produced it, and what else the answer shows (the
measurement whose timings it holds, the request's host for its absolute links, the run's labels
for an export). Nothing is invalidated: a change makes a new key, and old entries expire or are
culled.

Why: the bf16 transformer step's /results (917 nodes) is 2.5 MB of JSON. Building it for every
request (the artifact read and parsed, serialised again, gzipped by the middleware) cost the
server 149 ms of CPU per answer under load; sending the cached 0.17 MB costs about 10 ms, most
of it the request's handling (benchmarks/load.py, benchmarks/README.md).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import struct
import threading
import zlib
from collections.abc import Callable
from typing import NamedTuple

from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from explorer import presenters
from explorer.models import Run, RunArtifact
from explorer.runs import results_stamp

DOCUMENT_CACHE_S = 24 * 3600
# Part of every key: bump it when a document's layout changes, so that a cache shared across a
# deployment (Redis) never answers with the old layout.
LAYOUT = 1
# The gzip level of the stored documents: level 6 is zlib's default; each document is
# compressed once, so a better ratio is worth more than speed.
GZIP_LEVEL = 6
# As django.middleware.gzip decides whether a client accepts gzip.
ACCEPTS_GZIP = re.compile(r"\bgzip\b")


def run_key(run: Run, part: str, *details) -> str:
    """The cache key of `part` of a finished run's answers; `details`: whatever else that
    answer shows."""
    return ":".join(str(piece) for piece in ("run-doc", LAYOUT, run.pk, results_stamp(run),
                                             run.compiler_version, part, *details))


def digest(value) -> str:
    """A short digest of a JSON-serialisable value, for a key that must change with it."""
    text = json.dumps(value, sort_keys=True, cls=DjangoJSONEncoder)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def json_bytes(value) -> bytes:
    """A document as the API sends it: compact JSON, with Django's encoder for dates."""
    return json.dumps(value, separators=(",", ":"), cls=DjangoJSONEncoder).encode()


_building: dict[str, threading.Lock] = {}
_building_guard = threading.Lock()


def cached_gzip(key: str, build: Callable[[], bytes]) -> bytes:
    """The gzipped bytes cached under `key`; when missing, `build()`'s bytes, gzipped and
    cached. Threads of this process asking for the same missing key wait for one build
    rather than each building it (fifty clients arriving at once would otherwise run fifty
    builds of a big document side by side)."""
    data = cache.get(key)
    if data is not None:
        return data
    with _building_guard:
        lock = _building.setdefault(key, threading.Lock())
    try:
        with lock:
            data = cache.get(key)
            if data is None:
                data = gzip.compress(build(), compresslevel=GZIP_LEVEL, mtime=0)
                cache.set(key, data, DOCUMENT_CACHE_S)
    finally:
        with _building_guard:
            _building.pop(key, None)
    return data


def accepts_gzip(request: HttpRequest) -> bool:
    return bool(ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))


def gzipped_response(request: HttpRequest, data: bytes, content_type: str) -> HttpResponse:
    """`data` (gzipped) as the answer: as it is to a client that accepts gzip (the gzip
    middleware leaves an encoded answer alone), decompressed to one that does not."""
    if accepts_gzip(request):
        response = HttpResponse(data, content_type=content_type)
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(gzip.decompress(data), content_type=content_type)
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


# --- A page around a stored part --------------------------------------------------------------

# A gzip member's header: deflate, no name or comment, no time, unknown OS (RFC 1952).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


class Fragment(NamedTuple):
    """A part of a page kept ready to send: its UTF-8 bytes, and those bytes compressed on
    their own as raw deflate data that ends with a sync flush (on a byte boundary, not the
    final block), so that other deflate data may follow it in one stream."""
    raw: bytes
    deflated: bytes

    @classmethod
    def of(cls, text: str) -> Fragment:
        raw = text.encode()
        return cls(raw, _deflate(raw, zlib.Z_SYNC_FLUSH))

    @property
    def text(self) -> str:
        return self.raw.decode()


def _deflate(data: bytes, flush: int) -> bytes:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(flush)


def gzip_around(head: str, middle: Fragment, tail: str) -> bytes:
    """One gzip stream of head + middle + tail that compresses only the head and the tail: a
    deflate stream may be made of pieces compressed apart, each but the last ended by a sync
    flush. The trailer's CRC-32 runs over all the bytes (zlib's is a few GB/s)."""
    first, last = head.encode(), tail.encode()
    crc = zlib.crc32(last, zlib.crc32(middle.raw, zlib.crc32(first)))
    size = len(first) + len(middle.raw) + len(last)
    return b"".join((GZIP_HEADER, _deflate(first, zlib.Z_SYNC_FLUSH), middle.deflated,
                     _deflate(last, zlib.Z_FINISH), struct.pack("<II", crc, size & 0xFFFFFFFF)))


def page_response(request: HttpRequest, html: str, marker: str, middle: Fragment,
                  status: int = 200) -> HttpResponse:
    """The page `html` with `middle` where `marker` stands (once): gzipped for a client that
    accepts it, with `middle` compressed once and not for every request (the gzip middleware
    would compress the whole page each time: 1-2 ms for a 166 kB run page), plain otherwise."""
    head, _, tail = html.partition(marker)
    if accepts_gzip(request):
        response = HttpResponse(gzip_around(head, middle, tail), status=status)
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(head + middle.text + tail, status=status)
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


def best_totals(runs: list[Run]) -> dict[str, list[dict]]:
    """Per run id, `presenters.best_totals` of its artifact ([] for a run not done), for the
    lists that show each run's best plan per device (history, gallery, team page): from the
    cache, else from the artifacts of the runs missing there, read one at a time (the runs
    themselves come without their artifacts)."""
    keys = {run.pk: run_key(run, "best-totals") for run in runs if run.status == Run.DONE}
    found = cache.get_many(keys.values())
    totals = {pk: found[key] for pk, key in keys.items() if key in found}
    missing = [pk for pk in keys if pk not in totals]
    if not missing:   # the usual case: building the query would cost 0.3 ms of CPU for nothing
        return totals
    for pk, artifact in RunArtifact.objects.filter(run_id__in=missing) \
            .values_list("run_id", "data").iterator(chunk_size=1):
        totals[pk] = presenters.best_totals(artifact)
        cache.set(keys[pk], totals[pk], DOCUMENT_CACHE_S)
    return totals
