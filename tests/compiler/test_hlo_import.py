"""The HLO text importer on the syntax XLA prints, on XLA's own test corpus and on bad input."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import InputError, LimitError, UnsupportedError
from compiler.importers import load_graphs
from compiler.importers.hlo_text import import_hlo, import_hlo_modules
from compiler.ir.verify import verify
from compiler.limits import Limits

CORPUS = Path(__file__).resolve().parents[1] / "data" / "xla"
CORPUS_FILES = sorted(p for p in CORPUS.glob("*") if p.suffix in (".hlo", ".txt"))
JAX_FILES = sorted((Path(__file__).parents[1] / "data" / "hlo").glob("*.hlo"))


def hlo(text: str, **kwargs):
    return import_hlo(textwrap.dedent(text), "test.hlo", **kwargs)


# -- the syntax as XLA prints it ------------------------------------------------------------------


def test_it_reads_prefixes_layouts_and_typed_operands():
    graph = hlo("""
        HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[3,2]{0,1}}

        ENTRY %main.4 (Arg_0.1: f32[2,3]) -> f32[3,2] {
          %Arg_0.1 = f32[2,3]{1,0} parameter(0), metadata={op_name="x" source_file="a//b.py"}
          %neg.2 = f32[2,3]{1,0} negate(f32[2,3]{1,0} %Arg_0.1)
          ROOT %t.3 = f32[3,2]{0,1} transpose(f32[2,3]{1,0} %neg.2), dimensions={1,0}
        }
    """)
    assert graph.name == "m"
    assert list(graph.nodes) == ["Arg_0.1", "neg.2", "t.3"]
    root = graph.root_node
    assert root.op == "transpose" and root.attrs["dimensions"] == (1, 0)
    assert root.shape.dims == (3, 2) and root.shape.layout == (0, 1)
    assert graph.node("Arg_0.1").extra["metadata"].startswith("{op_name=")
    assert graph.node("neg.2").loc.line == 6 and graph.node("neg.2").loc.col == 3


def test_it_skips_comments_run_lines_and_index_comments():
    graph = hlo("""
        // RUN: hlo-opt %s | FileCheck %s
        /* a block
           comment */
        ENTRY e {
          a = f32[4] parameter(0)
          // CHECK: something
          b = f32[4] parameter(1)
          ROOT t = (f32[4], /*index=1*/f32[4]) tuple(a, /*index=1*/b)
        }
    """)
    assert graph.output_names() == ["a", "b"]


def test_it_reads_instructions_over_several_lines_and_multiline_backend_config():
    graph = hlo("""
        ENTRY e {
          a = f32[8,16] parameter(0)
          c = f32[] constant(0)
          ROOT r = f32[8]
            reduce(a, c),
            dimensions={1},
            to_apply=add, backend_config={
              "operation_queue_id": "0",
              "nested": {"x": [1, 2]}
            }
        }
        add {
          x = f32[] parameter(0)
          y = f32[] parameter(1)
          ROOT s = f32[] add(x, y)
        }
    """)
    root = graph.root_node
    assert root.attrs["reducer"] == "add" and root.attrs["dimensions"] == (1,)
    assert '"nested"' in root.extra["backend_config"]


@pytest.mark.parametrize("body, reducer", [
    ("add(x, y)", "add"), ("maximum(y, x)", "maximum"), ("minimum(x, y)", "minimum"),
    ("multiply(x, y)", "multiply"), ("and(x, y)", "and"), ("or(x, y)", "or"),
    ("subtract(x, y)", None),
])
def test_it_recognises_reducers_by_their_body(body, reducer):
    dtype = "pred" if reducer in ("and", "or") else "f32"
    graph = hlo(f"""
        r {{
          x = {dtype}[] parameter(0)
          y = {dtype}[] parameter(1)
          ROOT z = {dtype}[] {body}
        }}
        ENTRY e {{
          a = {dtype}[4,5] parameter(0)
          c = {dtype}[] parameter(1)
          ROOT out = {dtype}[4] reduce(a, c), dimensions={{1}}, to_apply=r
        }}
    """)
    assert graph.root_node.attrs["reducer"] == reducer
    assert "r" in graph.computations  # kept, so a general reducer can still be evaluated


def test_it_inlines_fusions_and_calls_and_remembers_the_fusion():
    graph = hlo("""
        fused {
          p0 = f32[4] parameter(0)
          p1 = f32[4] parameter(1)
          m = f32[4] multiply(p0, p1)
          e = f32[4] exponential(m)
          ROOT t = (f32[4], f32[4]) tuple(m, e)
        }
        callee {
          q = f32[4] parameter(0)
          ROOT n = f32[4] negate(q)
        }
        ENTRY e {
          a = f32[4] parameter(0)
          b = f32[4] parameter(1)
          f = (f32[4], f32[4]) fusion(a, b), kind=kLoop, calls=fused
          g0 = f32[4] get-tuple-element(f), index=0
          g1 = f32[4] get-tuple-element(f), index=1
          c = f32[4] call(g1), to_apply=callee
          ROOT r = f32[4] add(g0, c)
        }
    """)
    ops = {n.name: n.op for n in graph}
    assert "fusion" not in ops.values() and "call" not in ops.values()
    assert "get-tuple-element" not in ops.values()  # looked through the fusion's tuple
    assert graph.node("m").fused_in == "f" and graph.node("e").fused_in == "f"
    assert graph.node("n").fused_in is None
    assert graph.root_node.operands == ("m", "n")
    assert graph.computations == {}  # inlined bodies are not kept as sub-graphs
    verify(graph)


def test_it_renames_nodes_of_a_fusion_inlined_twice():
    graph = hlo("""
        body {
          p = f32[4] parameter(0)
          ROOT s = f32[4] sqrt(p)
        }
        ENTRY e {
          a = f32[4] parameter(0)
          f1 = f32[4] fusion(a), kind=kLoop, calls=body
          f2 = f32[4] fusion(f1), kind=kLoop, calls=body
          ROOT s = f32[4] negate(f2)
        }
    """)
    sqrts = [n for n in graph if n.op == "sqrt"]
    assert len(sqrts) == 2 and len({n.name for n in sqrts}) == 2
    assert "s" in graph.nodes and graph.node("s").op == "negate"  # the outer name wins
    assert {n.fused_in for n in sqrts} == {"f1", "f2"}


def test_it_keeps_while_and_conditional_bodies_as_subgraphs():
    graph = hlo("""
        cond {
          s = (s32[], f32[4]) parameter(0)
          i = s32[] get-tuple-element(s), index=0
          n = s32[] constant(3)
          ROOT lt = pred[] compare(i, n), direction=LT
        }
        body {
          s = (s32[], f32[4]) parameter(0)
          i = s32[] get-tuple-element(s), index=0
          x = f32[4] get-tuple-element(s), index=1
          one = s32[] constant(1)
          j = s32[] add(i, one)
          y = f32[4] add(x, x)
          ROOT t = (s32[], f32[4]) tuple(j, y)
        }
        yes {
          p = f32[4] parameter(0)
          ROOT r = f32[4] negate(p)
        }
        no {
          p = f32[4] parameter(0)
          ROOT r = f32[4] abs(p)
        }
        ENTRY e {
          x = f32[4] parameter(0)
          flag = pred[] parameter(1)
          zero = s32[] constant(0)
          init = (s32[], f32[4]) tuple(zero, x)
          w = (s32[], f32[4]) while(init), condition=cond, body=body
          out = f32[4] get-tuple-element(w), index=1
          ROOT c = f32[4] conditional(flag, out, out), true_computation=yes, false_computation=no
        }
    """)
    w = graph.node("w")
    assert (w.attrs["condition"], w.attrs["body"]) == ("cond", "body")
    assert graph.root_node.attrs["branch_computations"] == ("yes", "no")
    assert set(graph.computations) == {"cond", "body", "yes", "no"}
    assert graph.computations["body"].root_node.op == "tuple"
    verify(graph)


def test_it_parses_slice_padding_window_and_literals():
    graph = hlo("""
        ENTRY e {
          a = f32[8,6] parameter(0)
          z = f32[] constant(-inf)
          s = f32[4,2] slice(a), slice={[0:8:2], [1:5:2]}
          p = f32[10,17] pad(a, z), padding=1_1x0_1_2
          k = s32[2,3] constant({ {1, 2, 3}, {4, 5, 6} })
          h = bf16[2] constant({0.5, -1.25})
          w = f32[4,3] reduce-window(a, z), window={size=2x2 stride=2x2 pad=0_0x0_0}, to_apply=mx
          ROOT t = (f32[4,2], f32[10,17], s32[2,3], bf16[2], f32[4,3]) tuple(s, p, k, h, w)
        }
        mx {
          x = f32[] parameter(0)
          y = f32[] parameter(1)
          ROOT m = f32[] maximum(x, y)
        }
    """)
    assert graph.node("s").attrs["slice"] == ((0, 8, 2), (1, 5, 2))
    assert graph.node("p").attrs["padding"] == ((1, 1, 0), (0, 1, 2))
    assert graph.node("z").attrs["value"] == -np.inf
    np.testing.assert_array_equal(graph.node("k").attrs["value"], [[1, 2, 3], [4, 5, 6]])
    assert graph.node("h").attrs["value"].dtype.name == "bfloat16"
    window = graph.node("w").attrs["window"]
    assert window["size"] == (2, 2) and window["stride"] == (2, 2)
    assert graph.node("w").attrs["reducer"] == "maximum"
    verify(graph)


def test_a_bare_fused_computation_is_its_own_entry():
    graph = hlo("""
        add {
          x = f32[] parameter(0)
          y = f32[] parameter(1)
          ROOT s = f32[] add(x, y)
        }
        fusion {
          p = f32[2,3] parameter(0)
          c = f32[] constant(0)
          ROOT r = f32[2] reduce(p, c), dimensions={1}, to_apply=add
        }
    """)
    assert graph.name == "fusion" and graph.parameters == ["p"]


def test_a_file_split_by_dashes_holds_several_modules():
    text = textwrap.dedent("""
        HloModule one
        ENTRY e {
          ROOT a = f32[2] parameter(0)
        }
        // -----
        HloModule two
        ENTRY e {
          a = f32[2] parameter(0)
          ROOT b = f32[2] negate(a)
        }
    """)
    graphs = import_hlo_modules(text, "split.hlo")
    assert [g.name for g in graphs] == ["one", "two"]
    assert graphs[1].node("b").loc.line == 10  # lines count from the top of the whole file


def test_an_omitted_tuple_shape_is_inferred():
    graph = hlo("""
        ENTRY e {
          a = f32[2] parameter(0)
          b = s32[] parameter(1)
          ROOT t = tuple(a, b)
        }
    """)
    assert str(graph.root_node.shape) == "(f32[2], s32[])"


# -- XLA's corpus and JAX's modules ----------------------------------------------------------------


# Corpus files that are not valid HLO, with the message part that says why. XLA's verifier
# rejects them too: print_indexing_test.hlo feeds a tool that never runs the verifier, and its
# transpose with dimensions={0,1} cannot turn f32[256,512] into f32[512,256].
REJECTED = {
    "print_indexing_test.hlo": "declared f32[512,256] but transpose of f32[256,512] gives "
                               "f32[256,512]",
}


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_every_corpus_file_imports_or_is_rejected_with_a_specific_message(path, run_report):
    if path.name in REJECTED:
        with pytest.raises(InputError) as info:
            load_graphs(str(path))
        run_report.append(f"rejected: {info.value}")
        assert str(info.value).startswith(path.name + ":")
        assert REJECTED[path.name] in str(info.value)
        return
    graphs = load_graphs(str(path))
    for graph in graphs:
        verify(graph)
        run_report.extend(f"{path.name}: {note}" for note in graph.notes)
    assert graphs and all(len(g) > 0 for g in graphs)


def test_the_corpus_is_there():
    assert len(CORPUS_FILES) >= 100, f"expected XLA's corpus in {CORPUS}"


@pytest.mark.parametrize("path", JAX_FILES, ids=lambda p: p.stem)
def test_every_jax_module_imports_and_verifies(path):
    graph = load_graphs(str(path))[0]
    verify(graph)
    inputs = np.load(path.with_suffix(".inputs.npz"))
    assert len(graph.parameters) == len(inputs.files)


# -- bad input ------------------------------------------------------------------------------------


def error_of(text: str, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        graphs = import_hlo_modules(textwrap.dedent(text), "bad.hlo", **kwargs)
        for g in graphs:
            verify(g)
    return info.value


def test_an_unknown_opcode_is_named_with_its_position():
    error = error_of("""
        ENTRY e {
          a = f32[4] parameter(0)
          ROOT b = f32[4] frobnicate(a)
        }
    """)
    assert isinstance(error, UnsupportedError)
    assert str(error).startswith("bad.hlo:4:19: unknown opcode 'frobnicate'")


def test_an_undefined_operand_is_reported():
    error = error_of("""
        ENTRY e {
          a = f32[4] parameter(0)
          ROOT b = f32[4] negate(q)
        }
    """)
    assert "bad.hlo:4:8" in str(error) and "'q'" in str(error)


def test_a_cycle_is_reported_with_its_nodes():
    error = error_of("""
        ENTRY e {
          a = f32[4] parameter(0)
          b = f32[4] add(a, c)
          c = f32[4] negate(b)
          ROOT d = f32[4] abs(c)
        }
    """)
    assert "cycle" in str(error) and "b" in str(error) and "c" in str(error)


def test_a_shape_mismatch_is_reported():
    error = error_of("""
        ENTRY e {
          a = f32[4,8] parameter(0)
          b = f32[4,16] parameter(1)
          ROOT c = f32[4,8] add(a, b)
        }
    """)
    assert "bad.hlo:5:8" in str(error) and "[4,16]" in str(error)


def test_a_truncated_file_says_what_is_missing():
    error = error_of("""
        ENTRY e {
          a = f32[4] parameter(0)
          ROOT b = f32[4] negate(a)
    """)
    assert "not closed" in str(error) and "truncated" in str(error)


def test_absurd_dimensions_hit_the_limit():
    error = error_of("""
        ENTRY e {
          ROOT a = f32[1000000000,1000000000] parameter(0)
        }
    """)
    assert isinstance(error, LimitError) and "bad.hlo:3:12" in str(error)
    assert "FUSION_EXPLORER_MAX_TENSOR_ELEMENTS" in str(error)


def test_a_rank_above_the_limit_names_it():
    error = error_of("""
        ENTRY e {
          ROOT a = f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1] parameter(0)
        }
    """)
    assert isinstance(error, LimitError)
    assert str(error) == "bad.hlo:3:12: rank 17 exceeds the limit of 16 (FUSION_EXPLORER_MAX_RANK)"


@pytest.mark.parametrize("literal, message", [
    ("s32[] constant(100000000000)", "constant value 100000000000 does not fit in s32"),
    ("s4[2] constant({7, 8})", "constant value 8 does not fit in s4"),
    ("u8[] constant(-1)", "constant value -1 does not fit in u8"),
    ("s32[] constant(1.5)", "constant value 1.5 is not an integer, as s32 needs"),
    ("s64[] constant(nan)", "constant value nan is not an integer, as s64 needs"),
    ("pred[] constant(inf)", "constant value inf is not an integer, as pred needs"),
    ("token[] constant(0)", "a constant cannot hold token values"),
    ("f16[2] constant({1, 1e10})", "constant value 10000000000.0 is out of the range of f16"),
    ("f8e4m3fn[] constant(1000)", "constant value 1000.0 is out of the range of f8e4m3fn"),
])
def test_a_constant_its_type_cannot_hold_is_an_error_at_the_constant(literal, message):
    """Found by the fuzz suite: these raised OverflowError, ValueError or TypeError from NumPy
    instead of saying which constant is wrong, or (the floats) became inf or nan with a
    RuntimeWarning, where XLA's parser refuses them."""
    error = error_of(f"""
        ENTRY e {{
          ROOT c = {literal}
        }}
    """)
    assert str(error) == f"bad.hlo:3:8: {message}"


def test_a_constant_of_one_value_for_a_big_shape_is_not_written_out_element_by_element():
    """One value for a shape of millions of elements is a broadcast view of that value: the
    importer used to build a Python list of every element (a 10^11-element shape within the
    element limit would have needed terabytes)."""
    graph = hlo("""
        ENTRY e {
          ROOT c = f32[10000,1000] constant(1.5)
        }
    """)
    value = graph.nodes["c"].attrs["value"]
    assert value.shape == (10000, 1000) and value.dtype == np.float32
    assert value.strides == (0, 0) and float(value[123, 456]) == 1.5


def test_too_many_instructions_hit_the_node_limit():
    lines = ["ENTRY e {", "  a0 = f32[] parameter(0)"]
    lines += [f"  a{i} = f32[] negate(a{i - 1})" for i in range(1, 50)]
    lines += ["  ROOT r = f32[] negate(a49)", "}"]
    with pytest.raises(LimitError, match="more than 20 instructions"):
        import_hlo("\n".join(lines), "big.hlo", limits=Limits(max_nodes=20))


def test_a_module_past_the_node_limit_is_refused_while_it_is_read():
    """The instruction past the limit is refused as the parser reaches it (a 10^6-node chain
    no longer costs building the graph first), before anything later in the file is read."""
    lines = ["ENTRY e {", "  a0 = f32[] parameter(0)"]
    lines += [f"  a{i} = f32[] negate(a{i - 1})" for i in range(1, 50)]
    lines += ["  ROOT r = f32[] negate(a49", "}"]   # a syntax error past the limit
    with pytest.raises(LimitError) as caught:
        import_hlo("\n".join(lines), "big.hlo", limits=Limits(max_nodes=20))
    assert str(caught.value) == ("big.hlo:22:3: more than 20 instructions "
                                 "(FUSION_EXPLORER_MAX_NODES)")


def test_an_unknown_element_type_is_reported():
    error = error_of("""
        ENTRY e {
          ROOT a = f33[4] parameter(0)
        }
    """)
    assert "unknown element type 'f33'" in str(error) and "bad.hlo:3:12" in str(error)


def test_non_utf8_bytes_are_located(tmp_path):
    path = tmp_path / "latin1.hlo"
    path.write_bytes(b"ENTRY e {\n  a = f32[4] parameter(0) // caf\xe9\n}\n")
    with pytest.raises(InputError) as info:
        load_graphs(str(path))
    assert "latin1.hlo:2" in str(info.value)


def test_a_one_gigabyte_upload_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "huge.hlo"
    with open(path, "wb") as f:
        f.truncate(1 << 30)  # sparse: costs no disk, and no memory unless read
    with pytest.raises(LimitError, match="limit"):
        load_graphs(str(path))


def test_an_unbounded_dynamic_dimension_in_the_entry_is_rejected():
    error = error_of("""
        ENTRY e {
          ROOT a = f32[?,784] parameter(0)
        }
    """)
    assert isinstance(error, UnsupportedError) and "unbounded dynamic" in str(error)


CORPUS_TEXT = (CORPUS / "reduce_row__side_output.hlo").read_text() if CORPUS.exists() else ""


@pytest.mark.parametrize("cut", range(0, len(CORPUS_TEXT), max(1, len(CORPUS_TEXT) // 97)))
def test_any_truncation_of_a_real_file_gives_an_input_error_or_imports(cut):
    """Cutting a real file anywhere must never crash the importer with anything but a message."""
    try:
        for graph in import_hlo_modules(CORPUS_TEXT[:cut], "cut.hlo"):
            verify(graph)
    except InputError as error:
        assert str(error).startswith("cut.hlo")


def test_uploaded_bytes_over_the_limit_are_refused():
    from compiler.importers import import_bytes

    with pytest.raises(LimitError, match="limit"):
        import_bytes(b"ENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n" + b" " * 100, "up.hlo",
                     Limits(max_input_bytes=64))


def test_a_gzip_bomb_is_stopped_at_the_limit():
    import gzip

    from compiler.importers import import_bytes

    bomb = gzip.compress(b" " * (10 << 20))  # 10 MiB of blanks in about 10 KiB
    assert len(bomb) < 64 << 10
    with pytest.raises(LimitError, match="decompressed size exceeds"):
        import_bytes(bomb, "bomb.hlo.gz", Limits(max_input_bytes=1 << 20))
