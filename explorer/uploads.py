"""Which file of an upload is the graph, when a user sends more than one, and the name a run
keeps for it (`upload_file_name`, one rule for every way in).

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
"""
from __future__ import annotations

import re
import zipfile
from pathlib import PurePosixPath

from compiler.errors import InputError, LimitError
from compiler.limits import Limits
from explorer.graph_store import CHUNK_BYTES, StagedFile

# Model files a bundle's graph may be; everything else in it is taken for external data.
MODEL_SUFFIXES = (".onnx", ".onnx.gz")
# A zip of an export holds the model and its data files: one per tensor at most.
MAX_ZIP_MEMBERS = 10_000
# The longest file name a run keeps (Run.filename's column, and most file systems' limit).
MAX_FILE_NAME_LENGTH = 255
# The suffixes a shortened name keeps, at most this long (".onnx.gz": the format is judged by
# them).
MAX_SUFFIX_LENGTH = 16
# What a name with nothing left of it is called.
UNNAMED = "upload"


def upload_file_name(name: str) -> str:
    """The name a run keeps for an upload, whichever way it came in (a form's file, pasted
    text, a sample, a zip's member, the JSON API's "filename"): its last path component, for
    either separator (`../../etc/passwd` is `passwd`, `C:\\models\\m.onnx` is `m.onnx`),
    without control or other unprintable characters (as Django's multipart parser drops them
    from a browser's names), and at most MAX_FILE_NAME_LENGTH characters, shortened before its
    suffixes. A name left empty (or `.`, `..`) is UNNAMED. The same name again is unchanged."""
    base = re.split(r"[/\\]", name)[-1]
    base = "".join(char for char in base if char.isprintable()).strip()
    if base in ("", ".", ".."):
        return UNNAMED
    if len(base) <= MAX_FILE_NAME_LENGTH:
        return base
    suffixes = PurePosixPath(base).suffixes
    suffix = next((kept for kept in ("".join(suffixes[-2:]), "".join(suffixes[-1:]))
                   if len(kept) <= MAX_SUFFIX_LENGTH), "")
    return base[:MAX_FILE_NAME_LENGTH - len(suffix)] + suffix


def graph_of(files: list[StagedFile]) -> tuple[StagedFile, str]:
    """The graph's file and file name among `files` (module docstring)."""
    if not files:
        raise InputError("no file was sent", "upload")
    if len(files) == 1:
        upload = files[0]
        if upload.name.lower().endswith(".zip"):
            return _from_zip(upload)
        upload.check()
        return upload, upload.name
    models = [upload for upload in files if upload.name.lower().endswith(MODEL_SUFFIXES)]
    names = ", ".join(upload.name for upload in files)
    if len(models) != 1:
        raise InputError(f"{len(files)} files were sent ({names}): send one graph file, or one "
                         f"ONNX model (.onnx) with its external data files, which must then "
                         f"hold exactly one .onnx file (it holds {len(models)})", "upload")
    models[0].check()
    return models[0], models[0].name


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
