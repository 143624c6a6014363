"""Which file of an upload is the graph, when a user sends more than one.

`torch.onnx.export` writes a real model as `model.onnx` plus its weights in one or more
external data files (`model.onnx.data`, or one file per tensor). Users drop them all at once,
or zip the folder. The explorer compiles the model file: fusion needs shapes and types, not
weight values, so an initializer kept outside becomes a parameter (the importer says so in the
run's notes) and the data files are neither read nor stored.

`graph_of(files)` takes the uploaded files (StagedFiles, explorer/graph_store.py: each already
on disk, hashed as it came) and returns the graph's file and name, or InputError saying what is
wrong with the bundle: no model file, or several; a zip with no model, a member past the size
limit, or more members than any export writes; a graph file past the size limit (LimitError).
A single file goes through unchanged. Nothing is read whole into memory: a zip's model is
streamed out of the archive into a StagedFile of its own.

`upload_file_name(name)` is the one rule for the name a run keeps for its file, whichever way the
file came: a multipart upload (the API's or the upload form's), the JSON API's "filename", a
zip's member.
"""
from __future__ import annotations

import zipfile

from compiler.errors import InputError, LimitError
from compiler.limits import Limits
from explorer.graph_store import CHUNK_BYTES, StagedFile

# Model files a bundle's graph may be; everything else in it is taken for external data.
MODEL_SUFFIXES = (".onnx", ".onnx.gz")
# A zip of an export holds the model and its data files: one per tensor at most.
MAX_ZIP_MEMBERS = 10_000
# The longest file name a run keeps (Run.filename's column).
MAX_FILE_NAME = 255
# The suffixes kept whole when a long name is shortened: they pick the format (.hlo.gz).
KEPT_SUFFIXES, MAX_SUFFIX = 2, 32


def upload_file_name(name: str) -> str:
    """The name a run keeps for an uploaded file, whichever way it came: its last path part
    (a script may send `../../etc/passwd` or `C:\\graphs\\m.hlo`), without the characters
    that do not print (control characters, NUL, line breaks; as Django's multipart parser
    drops them), and at most MAX_FILE_NAME characters, shortened in its stem so that the
    suffixes that pick the format stay (`.hlo.gz`). InputError when no name is left."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(char for char in base if char.isprintable()).strip()
    if base in ("", ".", ".."):
        raise InputError(f"the file name {name[:80]!r} names no file: give a name such as "
                         f"model.hlo (its suffix picks the format)")
    if len(base) <= MAX_FILE_NAME:
        return base
    suffix = "".join(f".{part}" for part in base.split(".")[1:][-KEPT_SUFFIXES:])
    if len(suffix) > MAX_SUFFIX:   # not a format's suffix: a long name with dots in it
        suffix = ""
    return base[:len(base) - len(suffix)][:MAX_FILE_NAME - len(suffix)] + suffix


def graph_of(files: list[StagedFile]) -> tuple[StagedFile, str]:
    """The graph's file and file name among `files` (module docstring)."""
    if not files:
        raise InputError("no file was sent", "upload")
    if len(files) == 1:
        upload = files[0]
        if upload.name.lower().endswith(".zip"):
            return _from_zip(upload)
        upload.check()
        return upload, upload_file_name(upload.name)
    models = [upload for upload in files if upload.name.lower().endswith(MODEL_SUFFIXES)]
    names = ", ".join(upload.name for upload in files)
    if len(models) != 1:
        raise InputError(f"{len(files)} files were sent ({names}): send one graph file, or one "
                         f"ONNX model (.onnx) with its external data files, which must then "
                         f"hold exactly one .onnx file (it holds {len(models)})", "upload")
    models[0].check()
    return models[0], upload_file_name(models[0].name)


def _from_zip(upload: StagedFile) -> tuple[StagedFile, str]:
    """The one ONNX model in a zip archive, copied out of it within the input size limit."""
    limits = Limits.from_env()
    try:
        archive = zipfile.ZipFile(upload.temporary_file_path())
    except (zipfile.BadZipFile, OSError) as error:
        raise InputError(f"not a readable zip archive: {error}", upload.name) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise LimitError(f"the archive holds {len(members):,} files, more than the "
                             f"{MAX_ZIP_MEMBERS:,} an ONNX export writes", upload.name)
        models = [member for member in members if not member.is_dir()
                  and member.filename.lower().endswith(MODEL_SUFFIXES)
                  and not member.filename.startswith("__MACOSX/")]
        if len(models) != 1:
            found = ", ".join(member.filename for member in models) or "none"
            raise InputError(f"a zip archive must hold exactly one ONNX model (.onnx) with its "
                             f"data files; this one holds {len(models)} ({found})", upload.name)
        member = models[0]
        if member.file_size > limits.max_input_bytes:
            raise LimitError(f"{member.filename} is {member.file_size:,} bytes, past the limit "
                             f"of {limits.max_input_bytes:,} (FUSION_EXPLORER_MAX_INPUT_BYTES)",
                             upload.name)
        name = upload_file_name(member.filename)
        model = StagedFile(name, limits=limits)
        try:
            with archive.open(member) as stream:
                # The size in the directory can lie (a zip bomb): the staged file stops
                # taking bytes past the limit, and so does this loop.
                chunk = stream.read(CHUNK_BYTES)
                while chunk and not model.over_limit:
                    model.write(chunk)
                    chunk = stream.read(CHUNK_BYTES)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
            model.close()
            raise InputError(f"cannot read {member.filename} from the archive: {error}",
                             upload.name) from None
        if model.over_limit:
            model.close()
            raise LimitError(f"{member.filename} inflates past the limit of "
                             f"{limits.max_input_bytes:,} bytes "
                             "(FUSION_EXPLORER_MAX_INPUT_BYTES)", upload.name)
        model.finish().check()
        return model, name
