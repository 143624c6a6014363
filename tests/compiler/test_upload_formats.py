"""Which importer an upload goes to, and the error for a file that is none of the formats."""

import functools
import gzip
import random
from pathlib import Path

import pytest

from compiler.errors import InputError
from compiler.importers import ACCEPTED, detect_format, import_bytes, sniff_upload

DATA = Path(__file__).resolve().parents[1] / "data"
HLO = (DATA / "hlo" / "softmax.hlo").read_bytes()
ONNX = (DATA / "onnx" / "mlp_layernorm.dynamo.onnx").read_bytes()
# Bytes no format has: the same every run (a seeded generator), not ONNX's first bytes.
RANDOM_BYTES = random.Random(33).randbytes(3000)


@pytest.mark.parametrize("filename, data, why", [
    ("model.zip", b"PK\x03\x04" + b"\0" * 40, "a zip archive"),
    ("graph.zip.gz", gzip.compress(b"PK\x03\x04" + b"\0" * 40, mtime=0), "a zip archive"),
    ("notes.txt", b"just some notes\nnothing else\n", "text, but not HLO"),
    ("upload", b"hello world", "text, but not HLO"),
    ("noise.bin", RANDOM_BYTES, "binary data, but not an ONNX model"),
    ("noise", gzip.compress(RANDOM_BYTES, mtime=0), "binary data, but not an ONNX model"),
])
def test_a_file_of_no_known_format_gets_an_error_naming_the_formats(filename, data, why):
    for read in (import_bytes, sniff_upload):
        with pytest.raises(InputError) as caught:
            read(data, filename)
        message = str(caught.value)
        assert message.startswith(f"{filename}: not a format we read: the file is {why}")
        assert message.endswith(f"the formats read are {ACCEPTED}")
        for suffix in (".hlo", ".mlir", ".onnx", ".json"):
            assert suffix in message


def test_an_onnx_model_is_found_by_its_content_whatever_the_name():
    assert detect_format("model.bin", ONNX) == detect_format("model", ONNX) == "onnx"
    assert len(import_bytes(ONNX, "model.bin")[0]) > 10


def test_a_truncated_onnx_model_is_still_judged_onnx_and_gets_the_onnx_error():
    for cut in (1, 2, 40, len(ONNX) // 2):
        with pytest.raises(InputError, match=r"^model\.bin: not a valid ONNX model"):
            import_bytes(ONNX[:cut], "model.bin")


@pytest.mark.parametrize("filename", ["graph.hlo", "model.onnx", "graph.json", "upload"])
def test_an_empty_file_is_called_empty_whatever_its_name(filename):
    for read in (import_bytes, sniff_upload):
        with pytest.raises(InputError) as caught:
            read(b"", filename)
        assert str(caught.value).startswith(f"{filename}: the file is empty (0 bytes)")


def test_hlo_text_is_found_by_its_content_whatever_the_name():
    assert detect_format("module.dat", HLO) == "hlo"
    assert detect_format("module.txt", HLO) == "hlo"
    assert len(import_bytes(HLO, "module.dat")[0]) > 10


def test_a_dot_hlo_file_that_is_not_hlo_gets_the_parsers_position():
    with pytest.raises(InputError, match=r"broken\.hlo:1:"):
        import_bytes(b"hello world", "broken.hlo")


@functools.cache
def _zip_bomb() -> bytes:
    """A zip archive of 64 MiB of zeros, about 64 KiB packed."""
    import io
    import zipfile

    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model.onnx", bytes(64 << 20))
    return packed.getvalue()


@pytest.mark.parametrize("filename", ["model.zip", "model.onnx", "graph.json", "module.hlo",
                                      "module.txt", "upload"])
def test_a_zip_bomb_is_refused_unopened_whatever_it_is_called(filename):
    """No importer unpacks zip archives: a bomb is refused as the bytes it is (a zip archive,
    or a file of its claimed format that does not parse), naming the file."""
    bomb = _zip_bomb()
    assert len(bomb) < 1 << 20
    with pytest.raises(InputError) as caught:
        import_bytes(bomb, filename)
    assert str(caught.value).startswith(filename)
    if not filename.endswith((".onnx", ".json")):
        # Found writing this test: a real archive was called invalid UTF-8, with advice to
        # save it as UTF-8, where the 40 zero bytes of the test above were not.
        assert str(caught.value).startswith(
            f"{filename}: not a format we read: the file is a zip archive; ")
