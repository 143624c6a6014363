"""The API client's parts that need no server (compiler/client.py): where it finds the server
and key, the gate's verdict on hand-built plans, the threshold's syntax, the Jupyter table's
escaping, and its plain errors (no server listening, a graph JAX or torch cannot lower).
tests/workers/test_client_flow.py drives it against the real stack."""
from __future__ import annotations

import socket

import pytest

from compiler import client
from compiler.client import ClientError
from compiler.kernels.matching import match_kernels, plan_changes


@pytest.fixture
def no_settings(monkeypatch, tmp_path):
    """No server or key in the environment, and the config file at a path of the test's."""
    for variable in (client.URL_VARIABLE, client.TOKEN_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    path = tmp_path / "config.toml"
    monkeypatch.setenv(client.CONFIG_VARIABLE, str(path))
    return path


def test_arguments_win_over_the_environment_which_wins_over_the_config_file(no_settings,
                                                                           monkeypatch):
    no_settings.write_text('server = "https://from-file.example"\ntoken = "file-key"\n')
    assert client.read_settings() == client.Settings("https://from-file.example", "file-key")

    monkeypatch.setenv(client.URL_VARIABLE, "https://from-env.example/")
    assert client.read_settings() == client.Settings("https://from-env.example", "file-key")

    assert client.read_settings("http://flag.example", "flag-key") == \
        client.Settings("http://flag.example", "flag-key")


def test_the_config_file_sits_under_xdg_config_home(monkeypatch, tmp_path):
    monkeypatch.delenv(client.CONFIG_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert client.config_path() == tmp_path / "fusion-explorer" / "config.toml"


def test_no_server_anywhere_names_the_three_places_to_give_one(no_settings):
    with pytest.raises(ClientError) as error:
        client.read_settings()
    assert "--server URL" in str(error.value)
    assert client.URL_VARIABLE in str(error.value)
    assert str(no_settings) in str(error.value)


def test_a_broken_config_file_is_named(no_settings):
    no_settings.write_text("server = https://unquoted\n")
    with pytest.raises(ClientError, match=f"{no_settings}: cannot read the config file"):
        client.read_settings()
    no_settings.write_text("server = 3\n")
    with pytest.raises(ClientError, match="server must be a string"):
        client.read_settings()


def test_a_server_that_is_not_listening_is_a_plain_error(no_settings):
    with socket.socket() as probe:      # a port nobody listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ClientError) as error:
        client.Client(f"http://127.0.0.1:{port}", "key").status("abc")
    assert str(error.value).startswith(f"cannot reach the server at http://127.0.0.1:{port}")
    assert "is it running" in str(error.value)


@pytest.mark.parametrize("text, value", [("3%", 0.03), ("3", 0.03), ("0.5 %", 0.005),
                                         ("0%", 0.0)])
def test_a_threshold_is_a_percentage(text, value):
    assert client.parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["three", "-1%", "nan"])
def test_a_threshold_that_is_no_percentage_is_refused(text):
    with pytest.raises(ClientError, match="the threshold must be a percentage"):
        client.parse_threshold(text)


def kernel(name: str, nodes: str, proj_us: float) -> dict:
    return {"name": name, "nodes": list(nodes), "proj_us": proj_us, "sol_us": proj_us / 2}


def plan(*kernels: dict) -> dict:
    total = sum(k["proj_us"] for k in kernels)
    return {"kernels": list(kernels), "total": {"proj_us": total, "sol_us": total / 2}}


def comparison(before: dict, after: dict, fail_over: float) -> client.Comparison:
    sides = [client.Side(run, f"{run} | step", f"https://fe.example/r/{run}", p)
             for run, p in (("base", before), ("head", after))]
    return client.Comparison("h100", "cost", *sides, fail_over,
                             match_kernels(before["kernels"], after["kernels"]),
                             plan_changes(before["kernels"], after["kernels"]))


# The baseline fuses a, b, c into one kernel (6 µs) beside d (4 µs): 10 µs in 2 kernels.
BASELINE = plan(kernel("fused.0", "abc", 6.0), kernel("loop.1", "d", 4.0))


def test_a_plan_split_into_more_kernels_and_slower_is_a_regression_with_both_reasons():
    # c split out of the fused kernel: 5 + 1.5 + 4 = 10.5 µs (+5 %), 3 kernels (+50 %).
    split = plan(kernel("fused.0", "ab", 5.0), kernel("loop.2", "c", 1.5),
                 kernel("loop.1", "d", 4.0))
    result = comparison(BASELINE, split, 0.03)

    assert result.regressed
    assert result.reasons() == ["projected total +5.0 % (over +3.0 %)",
                                "kernel count +50.0 % (over +3.0 %)"]
    assert result.to_dict()["matched"] == {"matched": 2, "only_a": 0, "only_b": 1}
    assert [change["kernel"] for change in result.changes["split"]] == ["fused.0"]


def test_growth_within_the_threshold_passes():
    slower = plan(kernel("fused.0", "abc", 6.2), kernel("loop.1", "d", 4.0))   # +2 %
    assert not comparison(BASELINE, slower, 0.03).regressed
    assert comparison(BASELINE, slower, 0.01).reasons() == \
        ["projected total +2.0 % (over +1.0 %)"]


def test_a_faster_plan_is_no_regression_even_at_a_zero_threshold():
    merged = plan(kernel("fused.0", "abcd", 8.0))
    assert not comparison(BASELINE, merged, 0.0).regressed


def test_the_markdown_links_both_runs_and_lists_the_kernel_changes():
    split = plan(kernel("fused.0", "ab", 5.0), kernel("loop.2", "c", 1.5),
                 kernel("loop.1", "d", 4.0))
    markdown = comparison(BASELINE, split, 0.03).markdown()

    assert "[head \\| step](https://fe.example/r/head)" in markdown
    assert "[base \\| step](https://fe.example/r/base)" in markdown
    assert "| projected total (µs) | 10.00 | 10.50 | +5.0 % |" in markdown
    assert "| kernels | 2 | 3 | +1 |" in markdown
    assert "| – → `loop.2` | – | 1.50 | +1.50 |" in markdown
    assert "| `fused.0` → `fused.0` | 6.00 | 5.00 | -1.00 |" in markdown
    assert markdown.startswith("### Fusion plan `cost` on h100: **Regression**")


def test_the_jupyter_table_escapes_what_users_wrote(no_settings):
    session = client.Client("https://fe.example", None)
    run = client.Run(session, {"id": "r1", "url": 'https://fe.example/r/r1"><b>',
                               "name": "<script>alert(1)</script>", "status": "done"},
                     {"devices": {"h100": {"strategies": {"custom:<i>x</i>": BASELINE}}}})
    shown = run._repr_html_()

    assert "<script>" not in shown and "<i>" not in shown and '"><b>' not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert "custom:&lt;i&gt;x&lt;/i&gt;" in shown
    assert "<td>10.00</td>" in shown


def test_a_function_jax_cannot_lower_is_a_plain_error_with_jaxs_message():
    import jax.numpy as jnp

    def mismatched(x):
        return x @ jnp.ones((3, 3))        # (2, 2) @ (3, 3)

    with pytest.raises(ClientError) as error:
        client.upload_jax(mismatched, jnp.ones((2, 2)), server="http://unused.example")
    assert str(error.value).startswith("JAX could not lower mismatched: TypeError: ")
    assert "dot_general requires contracting dimensions to have the same shape" in \
        str(error.value)


def test_a_model_torch_cannot_export_is_a_plain_error_with_torchs_message():
    import torch

    class Refuses(torch.nn.Module):
        def forward(self, x):
            raise ValueError("no forward for you")

    with pytest.raises(ClientError, match="torch could not export Refuses to ONNX: "
                                          "ValueError: no forward for you"):
        client.upload_torch(Refuses(), (torch.ones(2),), server="http://unused.example")


def test_the_client_commands_load_no_compiler_library_nor_framework(tmp_path):
    """`python -m compiler upload` in a CI step that only uploads: no NumPy, Django, JAX or
    torch imported, and a server that is not there is a plain error with exit status 2."""
    import subprocess
    import sys
    from pathlib import Path

    graph = tmp_path / "g.hlo"
    graph.write_text("HloModule m\n")
    probe = ("import runpy, sys\n"
             "sys.argv = ['compiler', 'upload', sys.argv[1], '--server', 'http://127.0.0.1:9']\n"
             "try:\n    runpy.run_module('compiler', run_name='__main__')\n"
             "except SystemExit as exit:\n    status = exit.code\n"
             "print(status, sorted({m.split('.')[0] for m in sys.modules}"
             " & {'numpy', 'django', 'jax', 'torch'}))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(graph)], capture_output=True,
                          text=True, cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "2 []", done.stdout + done.stderr
    assert "error:" in done.stderr and "Traceback" not in done.stderr
