"""Uploaded graphs' files: a content-addressed store behind Django's storage API, and the upload
handler that streams an upload into it.

A graph's bytes are a file named by their SHA-256 (`ab/cd/abcd...`, two levels of folders so
that no folder holds more than a few thousand entries) in the storage alias "graphs"
(settings.STORAGES: GraphFileStorage in GRAPH_STORE_DIR unless a deployment names another
backend). A GraphBlob row (explorer/models.py) is each file's index entry: runs point at it,
and the file goes when the last run that points at it does.

A web process never holds a whole upload. `GraphUploadHandler` (settings.FILE_UPLOAD_HANDLERS)
writes each uploaded file, chunk by chunk, to a temporary file in the store's `tmp/` folder
(a `StagedFile`), working out on the way what the request needs of it: its size, its SHA-256
(the run's id and the file's name), and the SHA-256 of the graph decompressed
(`Run.graph_sha256`) for a gzip upload. The size limit is enforced as the bytes come: past it
nothing more is written. Storing the file then renames the temporary file into its place, an
atomic step on one filesystem, so a file under its final name is always whole; the same bytes
arriving twice at once write the same file twice, harmlessly.

Temporary files go when their request ends (`close`), whatever happened to it; a process killed
mid-upload leaves its one behind, which `manage.py prune_graphs` removes once it is a day old.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import weakref
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from django.conf import settings
from django.core.files.storage import FileSystemStorage, storages
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.db import transaction
from django.utils import timezone

from compiler.errors import InputError
from compiler.importers import inflated_past_limit
from compiler.limits import Limits, check_input_size

STORAGE_ALIAS = "graphs"
# The store's folder of files being written (GraphFileStorage's own; with another backend, the
# system's temporary folder).
TEMP_FOLDER = "tmp"
TEMP_PREFIX = "upload-"
# What the upload handler and the store read and write at a time: big enough that a 256 MiB
# upload is a few hundred Python steps, small enough that no process notices the memory.
CHUNK_BYTES = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
# The threads that write and hash uploads' chunks beside the threads that receive them
# (StagedFile.write): one per gunicorn thread is enough.
_helpers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="graph-upload")


class GraphUnavailable(InputError):
    """A run's graph file cannot be read back: missing from the store, or not the bytes its
    name says (damaged). An InputError, so that a worker fails the run with the message."""


def graph_storage():
    return storages[STORAGE_ALIAS]


def file_name(sha256: str) -> str:
    """The store's name for the file of these bytes (their SHA-256 in hex)."""
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}"


def temp_folder() -> str:
    """Where uploads are written before they are stored: the store's own folder, so that
    storing one is a rename; the system's temporary folder for another storage backend."""
    storage = graph_storage()
    if isinstance(storage, GraphFileStorage):
        folder = storage.path(TEMP_FOLDER)
    else:
        folder = settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir()
    os.makedirs(folder, exist_ok=True)
    return folder


def put(graph: StagedFile) -> None:
    """Store the staged file under its content's name (a file already there is replaced by
    the same bytes: the name says what they are)."""
    graph_storage().save(file_name(graph.sha256), graph)


def exists(sha256: str) -> bool:
    return graph_storage().exists(file_name(sha256))


def read(sha256: str) -> bytes:
    """The stored bytes of this SHA-256, checked against it; GraphUnavailable saying what to
    do when the file is missing or damaged (a disk restored without it, a crash of the machine
    while it was written)."""
    try:
        with graph_storage().open(file_name(sha256), "rb") as file:
            data = file.read()
    except FileNotFoundError:
        raise GraphUnavailable(f"the uploaded graph's file ({sha256[:12]}...) is missing from "
                               "the graph store (GRAPH_STORE_DIR); upload the graph again")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise GraphUnavailable(f"the uploaded graph's file ({sha256[:12]}...) in the graph "
                               "store is damaged (its bytes are not the ones uploaded); upload "
                               "the graph again")
    return data


def delete(sha256: str) -> None:
    graph_storage().delete(file_name(sha256))


def prune_failed_uploads(now=None) -> list[str]:
    """Let go of the uploads of runs that failed more than FAILED_RUN_UPLOADS_KEPT_S ago
    (Run.remove_failed_uploads: the runs stay, saying so; a file goes with the last run that
    holds it); the ids of those runs. Every worker's sweeper does it (workers/sweeper.py), and
    `prune`."""
    from explorer.models import Run

    now = now or timezone.now()
    return Run.remove_failed_uploads(
        now - timedelta(seconds=settings.FAILED_RUN_UPLOADS_KEPT_S))


def prune(grace: timedelta = timedelta(hours=1),
          temporary_grace: timedelta = timedelta(days=1)) -> dict[str, int]:
    """Remove what the store keeps for nothing, and say how much of each: the uploads of runs
    that failed long ago (`prune_failed_uploads`), rows no run points at (the runs of a deleted
    user go without their graph's row) with their files, files no row names (stored by a
    request whose transaction then failed), and temporary files of uploads cut off by a killed
    process. Only what is older than `grace` (`temporary_grace` for temporary files), so that
    an upload being stored right now is left alone."""
    from explorer.models import GraphBlob

    now = timezone.now()
    pruned = {"failed runs' uploads": len(prune_failed_uploads(now)), "rows": 0, "files": 0,
              "temporary files": 0}
    unused = GraphBlob.unused().filter(created__lt=now - grace).values_list("pk", flat=True)
    for key in list(unused):
        with transaction.atomic():   # as Run.delete_with_graph: the row, then its file
            if GraphBlob.release(key):
                pruned["rows"] += 1
    storage = graph_storage()
    for first in storage.listdir("")[0]:
        if first == TEMP_FOLDER:
            continue
        for second in storage.listdir(first)[0]:
            folder = f"{first}/{second}"
            names = storage.listdir(folder)[1]
            known = set(GraphBlob.objects.filter(pk__in=names).values_list("pk", flat=True))
            for name in names:
                path = f"{folder}/{name}"
                if name not in known and storage.get_modified_time(path) < now - grace:
                    storage.delete(path)
                    pruned["files"] += 1
    if storage.exists(TEMP_FOLDER):
        for name in storage.listdir(TEMP_FOLDER)[1]:
            path = f"{TEMP_FOLDER}/{name}"
            if storage.get_modified_time(path) < now - temporary_grace:
                storage.delete(path)
                pruned["temporary files"] += 1
    return pruned


class GraphFileStorage(FileSystemStorage):
    """FileSystemStorage for content-addressed files. A name is its bytes' SHA-256, so a name
    already taken is never changed into another (the same bytes are there), and a file is
    written to a temporary file in the store's `tmp/` folder and renamed into place: readers
    see the whole file under its name or none. A StagedFile (already written there) is renamed
    without being copied."""

    def get_available_name(self, name, max_length=None):
        return name

    def _save(self, name, content):
        target = self.path(name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if isinstance(content, StagedFile) and content.path is not None \
                and os.path.dirname(content.path) == self.path(TEMP_FOLDER):
            content.move_to(target, self.file_permissions_mode)
            return name
        folder = self.path(TEMP_FOLDER)
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=folder)
        try:
            with os.fdopen(handle, "wb") as file:
                for chunk in content.chunks(CHUNK_BYTES):
                    file.write(chunk)
            if self.file_permissions_mode is not None:
                os.chmod(temporary, self.file_permissions_mode)
            os.replace(temporary, target)
        except BaseException:
            _remove_quietly(temporary)
            raise
        return name


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class GraphDigest:
    """The SHA-256 of an upload's graph as `explorer.models.graph_sha256` works it out from the
    whole bytes (gunzipped when they start as gzip: the first member, within the input size
    limit), fed chunk by chunk. A gzip upload that is corrupt or decompresses past the limit
    leaves its error in `error` instead."""

    def __init__(self, filename: str, limits: Limits):
        self.filename, self.limits = filename, limits
        self.error: InputError | None = None
        self._raw = hashlib.sha256()
        self._graph = hashlib.sha256()
        self._start = b""          # the first bytes, until there are two to tell gzip by
        self._inflater = None      # a zlib decompressor once the bytes are known to be gzip
        self._inflated = 0

    def update(self, chunk: bytes) -> None:
        self._raw.update(chunk)
        if self._inflater is None and len(self._start) < 2:
            self._start += chunk[:2]
            if len(self._start) >= 2 and self._start[:2] == GZIP_MAGIC:
                self._inflater = zlib.decompressobj(wbits=31)
        if self._inflater is not None:
            self._inflate(chunk)

    def _inflate(self, chunk: bytes) -> None:
        data = chunk
        while data and self.error is None and not self._inflater.eof:
            try:
                out = self._inflater.decompress(data, CHUNK_BYTES)
            except zlib.error as error:
                self.error = InputError(f"corrupt gzip data: {error}", self.filename)
                return
            self._inflated += len(out)
            if self._inflated > self.limits.max_input_bytes:
                self.error = inflated_past_limit(self.filename, self.limits)
                return
            self._graph.update(out)
            data = self._inflater.unconsumed_tail

    @property
    def sha256(self) -> str:
        """Of the bytes as they came."""
        return self._raw.hexdigest()

    @property
    def graph_sha256(self) -> str:
        """Of the graph: the bytes decompressed, or as they came when they are not gzip or do
        not decompress (as `explorer.models.uploaded` takes them)."""
        if self._inflater is None or self.error is not None:
            return self.sha256
        return self._graph.hexdigest()


class StagedFile(UploadedFile):
    """One uploaded file on its way into the store: a temporary file in the store's folder,
    written chunk by chunk (`write`), with its size, SHA-256 and graph digest (GraphDigest)
    kept as it grows. Past the input size limit nothing more is written (the file is dropped)
    and `check` raises the limit's error, naming the file's whole size; a .zip bundle is kept
    whole whatever its size (its directory is at its end), for explorer/uploads.py to take its
    model from. Closing it removes the temporary file unless the store took it (`move_to`)."""

    def __init__(self, name: str, content_type: str | None = None, charset: str | None = None,
                 content_type_extra: dict | None = None, limits: Limits | None = None):
        self.limits = limits or Limits.from_env()
        handle, path = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".part", dir=temp_folder())
        super().__init__(os.fdopen(handle, "w+b"), name, content_type, 0, charset,
                         content_type_extra)
        self.path: str | None = path
        # Removes the file if the object is dropped without being closed (a request that
        # failed half-way through its upload).
        self._cleanup = weakref.finalize(self, _remove_quietly, path)
        self.bundle = name.lower().endswith(".zip")
        self.over_limit = False
        self._pending: Future | None = None
        self._digest = GraphDigest(name, self.limits)

    @classmethod
    def from_bytes(cls, data: bytes, name: str, limits: Limits | None = None) -> StagedFile:
        """A staged file of bytes the request has in memory (pasted text, a sample, the JSON
        API's body): stored the same way as an upload."""
        staged = cls(name, limits=limits)
        for start in range(0, len(data), CHUNK_BYTES):
            staged.write(data[start:start + CHUNK_BYTES])
        return staged.finish()

    def write(self, chunk: bytes) -> None:
        """Take the next chunk. It is written and hashed by a helper thread while the caller
        reads the next one (hashlib, zlib and file writes let go of the GIL, so the two
        overlap: a third less time for a big upload); at most one chunk waits there."""
        self.size += len(chunk)
        if self.over_limit:
            return
        self._settle()
        if self.size > self.limits.max_input_bytes and not self.bundle:
            self.over_limit = True
            self._drop()
            return
        self._pending = _helpers.submit(self._absorb, chunk)

    def _absorb(self, chunk: bytes) -> None:
        self.file.write(chunk)
        self._digest.update(chunk)

    def _settle(self) -> None:
        """Wait for the chunk the helper thread has in hand (raising what it raised)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def finish(self) -> StagedFile:
        """The file complete: ready to be read from its start (or stored)."""
        self._settle()
        if self.path is not None:
            self.file.flush()
            self.file.seek(0)
        return self

    def check(self) -> None:
        """LimitError for a file past the size limit or a gzip file that decompresses past it;
        InputError for corrupt gzip data. Only the graph's file is checked: an ONNX model's
        external data files may be anything, of any size."""
        if self.over_limit:
            check_input_size(self.size, self.name, self.limits)
        if self._digest.error is not None:
            raise self._digest.error

    @property
    def sha256(self) -> str:
        return self._digest.sha256

    @property
    def graph_sha256(self) -> str:
        return self._digest.graph_sha256

    def head(self, count: int) -> bytes:
        """The first `count` bytes (the cheap checks' view of the file)."""
        with open(self.path, "rb") as file:
            return file.read(count)

    def temporary_file_path(self) -> str:
        return self.path

    def move_to(self, target: str, mode: int | None = None) -> None:
        """Rename the file to `target` (the store's name for it; `mode`: its permissions, as
        FILE_UPLOAD_PERMISSIONS says): it is no longer this object's to remove."""
        self.file.close()
        if mode is not None:
            os.chmod(self.path, mode)
        os.replace(self.path, target)
        self._cleanup.detach()
        self.path = None

    def _drop(self) -> None:
        self.file.close()
        self._cleanup()
        self.path = None

    def close(self) -> None:
        try:
            self._settle()
        finally:
            if self.path is not None:
                self._drop()
            else:
                self.file.close()


class GraphUploadHandler(FileUploadHandler):
    """Streams every uploaded file of a request into a StagedFile (module docstring) instead of
    Django's memory or temporary-file handlers: a web process holds one chunk of an upload at a
    time, whatever its size."""

    chunk_size = CHUNK_BYTES

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.file = StagedFile(self.file_name, self.content_type, self.charset,
                               self.content_type_extra)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.file.write(raw_data)

    def file_complete(self, file_size: int) -> StagedFile:
        return self.file.finish()

    def upload_interrupted(self) -> None:
        """The request's body ended inside a file: drop what was written of it."""
        if hasattr(self, "file"):
            self.file.close()
