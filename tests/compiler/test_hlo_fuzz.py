"""Mangled HLO never crashes or hangs the importer: it imports, or it fails with an InputError.

Real files are cut, spliced and sprinkled with HLO's own punctuation by hypothesis; whatever
comes out must end in a graph that verifies or in a message that starts with the file name.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.errors import InputError
from compiler.importers.hlo_text import import_hlo_modules

ROOT = Path(__file__).parents[2]
CORPUS = ROOT.parent / "shared" / "corpus" / "xla"
SOURCES = [
    (ROOT / "tests" / "data" / "hlo" / "layer_norm_bwd.hlo").read_text(),
    (CORPUS / "scatter__variadic_scatter_argmax.hlo").read_text(),
    (CORPUS / "reduce_row__mof_epilogue.hlo").read_text(),
]
PUNCTUATION = list("{}()[],=%:<>-/*\"\\\n ") + ["ROOT", "ENTRY", "f32[", "// -----\n", "?", "0x"]


@st.composite
def mangled(draw):
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 40)))
        insert = draw(st.lists(st.sampled_from(PUNCTUATION), max_size=3))
        text = text[:start] + "".join(insert) + text[end:]
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_mangled_hlo_imports_or_says_where_it_is_wrong(text):
    try:
        graphs = import_hlo_modules(text, "fuzz.hlo")
    except InputError as error:
        assert str(error).startswith("fuzz.hlo")
        return
    assert all(len(g) > 0 for g in graphs)
