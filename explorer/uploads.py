"""Which file of an upload is the graph, when a user sends more than one.

`torch.onnx.export` writes a real model as `model.onnx` plus its weights in one or more
external data files (`model.onnx.data`, or one file per tensor). Users drop them all at once,
or zip the folder. The explorer compiles the model file: fusion needs shapes and types, not
weight values, so an initializer kept outside becomes a parameter (the importer says so in the
run's notes) and the data files are neither read nor stored.

`graph_of(files)` takes the uploaded files (Django UploadedFile objects, read only as far as
needed) and returns the graph's bytes and name, or InputError saying what is wrong with the
bundle: no model file, or several; a zip with no model, a member past the size limit, or more
members than any export writes. A single file goes through unchanged.
"""
from __future__ import annotations

import zipfile

from compiler.errors import InputError, LimitError
from compiler.limits import Limits

# Model files a bundle's graph may be; everything else in it is taken for external data.
MODEL_SUFFIXES = (".onnx", ".onnx.gz")
# A zip of an export holds the model and its data files: one per tensor at most.
MAX_ZIP_MEMBERS = 10_000


def graph_of(files: list) -> tuple[bytes, str]:
    """The graph's bytes and file name among `files` (module docstring)."""
    if not files:
        raise InputError("no file was sent", "upload")
    if len(files) == 1:
        upload = files[0]
        if upload.name.lower().endswith(".zip"):
            return _from_zip(upload)
        return upload.read(), upload.name
    models = [upload for upload in files if upload.name.lower().endswith(MODEL_SUFFIXES)]
    names = ", ".join(upload.name for upload in files)
    if len(models) != 1:
        raise InputError(f"{len(files)} files were sent ({names}): send one graph file, or one "
                         f"ONNX model (.onnx) with its external data files, which must then "
                         f"hold exactly one .onnx file (it holds {len(models)})", "upload")
    return models[0].read(), models[0].name


def _from_zip(upload) -> tuple[bytes, str]:
    """The one ONNX model in a zip archive, read within the input size limit."""
    limits = Limits.from_env()
    try:
        archive = zipfile.ZipFile(upload)
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
        try:
            with archive.open(member) as stream:
                # The size in the directory can lie (a zip bomb): read one byte past the limit.
                data = stream.read(limits.max_input_bytes + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
            raise InputError(f"cannot read {member.filename} from the archive: {error}",
                             upload.name) from None
        if len(data) > limits.max_input_bytes:
            raise LimitError(f"{member.filename} inflates past the limit of "
                             f"{limits.max_input_bytes:,} bytes "
                             "(FUSION_EXPLORER_MAX_INPUT_BYTES)", upload.name)
        return data, member.filename.rsplit("/", 1)[-1]
