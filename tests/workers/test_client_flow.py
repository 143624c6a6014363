"""The API client (compiler/client.py) and its commands against the real stack: the live
server, the session's Redis and Celery compile worker (tests/services.py). Two commits of a
JAX training step go through CI as a team would run it (upload the first, mark it the
baseline of `main`, upload the second, gate it) and the second, which adds gradient clipping
(its norm: a reduction over every gradient, then a rescale), fails the gate; a torch model
goes through the notebook path, its weights in an external data file, and its table renders
as Jupyter shows it. Each test compiles its runs once and checks everything it can on them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from compiler import client
from compiler.client import ClientError
from compiler.stages.pipeline import compile_graph
from explorer.models import ApiToken, Membership, Run, TagBaseline, Team

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120
DEVICES, STRATEGIES = ["h100"], ["xla", "cost"]

pytestmark = pytest.mark.timeout(400)


@pytest.fixture
def stack(transactional_db, live_server, compile_queue, monkeypatch, tmp_path):
    """The server's URL, a CI user's API key (scope submit) and their team "models"; the
    client reads no config file of the machine's."""
    monkeypatch.setenv(client.CONFIG_VARIABLE, str(tmp_path / "absent.toml"))
    for variable in (client.URL_VARIABLE, client.TOKEN_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    user = get_user_model().objects.create_user("ci")
    team = Team.objects.create(name="models")
    Membership.objects.create(team=team, user=user)
    key = ApiToken.create_for(user, "ci", scope=ApiToken.SUBMIT)[1]
    return {"server": live_server.url, "token": key, "team": team, "log": compile_queue.log}


def cli(stack, *args: str) -> subprocess.CompletedProcess:
    """`python -m compiler ARGS` as a CI step runs it: server and key from the environment."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "JAX_PLATFORMS": "cpu",
           client.URL_VARIABLE: stack["server"], client.TOKEN_VARIABLE: stack["token"]}
    return subprocess.run([sys.executable, "-m", "compiler", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=WAIT_S + 60)


def train_steps():
    """A two-layer MLP's SGD step before and after adding gradient clipping, and its
    example arguments."""
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        hidden = jnp.tanh(x @ params["w1"] + params["b1"])
        return jnp.mean((hidden @ params["w2"] - y) ** 2)

    def sgd_step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    def clipped_step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree_util.tree_leaves(grads)))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * scale * g, params, grads)

    params = {"w1": jnp.zeros((16, 32)), "b1": jnp.zeros(32), "w2": jnp.zeros((32, 4))}
    return sgd_step, clipped_step, (params, jnp.zeros((8, 16)), jnp.zeros((8, 4)))


def local_plans(text: bytes, filename: str) -> dict:
    """The reference: the compiler run here on the same upload."""
    return compile_graph(text, filename, DEVICES, STRATEGIES)["devices"]["h100"]["strategies"]


def test_two_commits_of_a_jax_step_through_ci_and_the_gate_fails_the_worse_one(stack,
                                                                              tmp_path):
    import jax

    sgd_step, clipped_step, example = train_steps()
    options = {"server": stack["server"], "token": stack["token"], "devices": DEVICES,
               "strategies": STRATEGIES, "visibility": "team", "team": "models",
               "tags": ["main"], "name": "mlp step", "timeout_s": WAIT_S}

    # Commit 1, from Python: lowered with jax.jit, uploaded, waited for.
    first = client.upload_jax(sgd_step, *example, **options)
    reference = local_plans(jax.jit(sgd_step).lower(*example).as_text().encode(),
                            "sgd_step.mlir")
    assert first.totals == {"h100": {s: p["total"]["proj_us"] for s, p in reference.items()}}
    assert first.url == f"{stack['server']}/r/{first.id}"

    # The main branch's job marks it the baseline of `main`.
    marked = cli(stack, "baseline", first.id, "--tag", "main")
    assert marked.returncode == 0, marked.stderr
    baseline = TagBaseline.objects.get(team=stack["team"], tag="main")
    assert (baseline.run_id, baseline.graph_name) == (first.id, "mlp step")

    # Commit 2, from the command line: its HLO file uploaded and waited for.
    hlo = tmp_path / "step.hlo"
    hlo.write_text(jax.jit(clipped_step).lower(*example).compiler_ir("hlo").as_hlo_text())
    uploaded = cli(stack, "upload", str(hlo), "--name", "mlp step", "--tags", "main",
                   "--devices", "h100", "--strategies", "xla,cost", "--visibility", "team",
                   "--team", "models", "--wait", "--json", "--timeout", str(WAIT_S))
    assert uploaded.returncode == 0, uploaded.stderr + stack["log"]()
    second = json.loads(uploaded.stdout)
    assert second["status"] == "done"
    assert second["url"] == f"{stack['server']}/r/{second['id']}"
    assert "done" in uploaded.stderr.splitlines()[-1]        # the progress line's last state
    clipped = local_plans(hlo.read_bytes(), hlo.name)
    assert {row["strategy"]: (row["proj_us"], row["kernels"]) for row in second["plans"]} == \
        {s: (p["total"]["proj_us"], len(p["kernels"])) for s, p in clipped.items()}

    # The gate: the clipped step's cost plan is slower and has more kernels than main's.
    before, after = reference["cost"], clipped["cost"]
    growth = after["total"]["proj_us"] / before["total"]["proj_us"] - 1
    assert growth > 0.03 and len(after["kernels"]) > len(before["kernels"])
    gate = cli(stack, "compare", second["id"], "--baseline", "tag:main", "--fail-over", "3%")
    assert gate.returncode == 1, gate.stderr
    summary = gate.stdout
    assert summary.startswith("### Fusion plan `cost` on h100: **Regression**: projected "
                              f"total {growth * 100:+.1f} % (over +3.0 %)")
    assert "kernel count" in summary
    assert f"- This run: [mlp step]({second['url']})" in summary
    assert f"- Baseline: [mlp step]({first.url})" in summary
    assert f"| kernels | {len(before['kernels'])} | {len(after['kernels'])} |" in summary

    # The same run against itself passes, and a looser threshold lets the slower one through.
    same = cli(stack, "compare", first.id, "--baseline", first.id, "--json")
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["regressed"] is False
    kernel_growth = len(after["kernels"]) / len(before["kernels"]) - 1
    above_both = f"{max(growth, kernel_growth) * 100 + 1:.1f}%"
    loose = cli(stack, "compare", second["id"], "--baseline", first.id, "--fail-over",
                above_both)
    assert loose.returncode == 0, loose.stdout


class Table(HTMLParser):
    """The cells of an HTML table, row by row, and the links."""

    def __init__(self, markup: str):
        super().__init__()
        self.rows, self.links, self._cell = [], [], None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "a":
            self.links.append(dict(attrs)["href"])

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self._cell)
            self._cell = None


def test_a_torch_model_from_a_notebook_and_the_clients_plain_errors(stack, tmp_path):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)).eval()
    # A threshold of one byte: the weights go in an external data file, as a big model's do.
    run = client.upload_torch(model, (torch.randn(8, 16),), external_data_over=1,
                              server=stack["server"], token=stack["token"], devices=DEVICES,
                              strategies=STRATEGIES, timeout_s=WAIT_S)
    stored = Run.objects.get(pk=run.id)
    assert stored.filename == "Sequential.onnx" and stored.name == "Sequential"
    notes = stored.artifact["graph"]["notes"]
    assert notes and all("keeps its data outside the model file" in note for note in notes)

    # Jupyter shows an object through its _repr_html_: the link, and a row per plan.
    shown = Table(getattr(run, "_repr_html_")())
    assert shown.links == [run.url]
    plans = run.results["devices"]["h100"]["strategies"]
    best = min(p["total"]["proj_us"] for p in plans.values())
    assert shown.rows[0] == ["device", "plan", "kernels", "projected µs", "SOL µs", "vs best"]
    assert shown.rows[1:] == [
        ["h100", name, str(len(p["kernels"])), f"{p['total']['proj_us']:,.2f}",
         f"{p['total']['sol_us']:,.2f}", f"{p['total']['proj_us'] / best:.2f}x"]
        for name, p in plans.items()]

    # Plain errors: a wrong key, an upload the server refuses, a wait that times out.
    with pytest.raises(ClientError) as wrong_key:
        client.upload_file(REPO_ROOT / "tests/data/hlo/softmax.hlo", server=stack["server"],
                           token="fe_not-a-key")
    assert str(wrong_key.value) == (
        f"the API key was refused (unknown, revoked or expired API key): make a key with "
        f"scope 'submit' at {stack['server']}/account/api-tokens and pass it with --token or "
        f"FUSION_EXPLORER_TOKEN")

    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT r = f32[2] frobnicate()\n}\n")
    refused = cli(stack, "upload", str(bad))
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: the server refused the upload of bad.hlo (400): "
                                     "bad.hlo:4:")
    assert "Traceback" not in refused.stderr

    softmax = REPO_ROOT / "tests/data/hlo/softmax.hlo"
    with pytest.raises(ClientError) as too_long:
        client.upload_file(softmax, server=stack["server"], token=stack["token"],
                           devices=DEVICES, strategies=["unfused"], timeout_s=0)
    message = str(too_long.value)
    assert message.startswith("gave up waiting after 0 s: run ")
    run_id = message.split("run ", 1)[1].split(" ", 1)[0]
    assert message.endswith(f"\n  {stack['server']}/r/{run_id}")
    # Left to finish, so that the worker is not writing to it when the test's data goes.
    client.Client(stack["server"], stack["token"]).run(run_id).wait(WAIT_S)
