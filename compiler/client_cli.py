"""The client's commands: `python -m compiler upload | compare | baseline` (compiler/client.py).

They talk to a Fusion Explorer server and need nothing of the compiler library: `python -m
compiler` runs them from here without importing it (compiler/__main__.py), so a CI step that
only uploads and gates loads no NumPy, no JAX, no torch. compiler/cli.py lists them with the
other commands for its --help.
"""

from __future__ import annotations

import argparse
import json
import sys

from compiler import client
from compiler.client import ClientError

# The exit status of a command that could not talk to the server or whose run failed: apart
# from the regression gate's 1, so that a CI step can tell "slower" from "could not tell".
CLIENT_ERROR_STATUS = 2
SERVER_HELP = (f"the server's URL (default ${client.URL_VARIABLE}, else `server` in the "
               f"config file: ${client.CONFIG_VARIABLE}, by default "
               f"~/.config/fusion-explorer/config.toml)")
TOKEN_HELP = (f"an API key of scope submit (default ${client.TOKEN_VARIABLE}, else `token` in "
              f"the config file)")


def add_commands(commands) -> None:
    """The client's commands on the command line's subparsers (`commands`)."""
    upload = commands.add_parser(
        "upload", help="upload a graph to a Fusion Explorer server; --wait for its plans",
        description="Upload a graph file (HLO text, StableHLO, ONNX with its external data "
                    "files, the JSON format) to a Fusion Explorer server and print its "
                    "permanent link; with --wait, show its progress on stderr until it is "
                    "compiled and print its plans' totals.")
    upload.add_argument("files", nargs="+", metavar="FILE",
                        help="the graph (an ONNX model's external data files after it)")
    _server_arguments(upload)
    upload.add_argument("--name", help="the run's name (the graph's name in the team's "
                                       "review and for its baselines; default the file name)")
    upload.add_argument("--tags", help="comma-separated tags, e.g. main,nightly")
    upload.add_argument("--devices", help="comma-separated device models (default h100)")
    upload.add_argument("--strategies", help="comma-separated strategies (default all)")
    upload.add_argument("--runtime", metavar="graph|stream",
                        help="how kernels are launched (the server checks the name)")
    upload.add_argument("--visibility", choices=("private", "team", "public"),
                        help="who may see the run (default private; team needs --team)")
    upload.add_argument("--team", help="one of your teams, by name or id")
    upload.add_argument("--wait", action="store_true",
                        help="wait until the run is compiled and print its plans' totals")
    upload.add_argument("--timeout", type=float, default=client.WAIT_TIMEOUT_S, metavar="S",
                        help=f"with --wait: give up after S seconds (default "
                             f"{client.WAIT_TIMEOUT_S:g})")
    upload.add_argument("--json", action="store_true",
                        help="one JSON object on stdout: the run's id, link, status and, with "
                             "--wait, its plans")

    compare = commands.add_parser(
        "compare", help="a run's plan against a baseline's: a markdown summary, exit 1 on a "
                        "regression",
        description="Compare one plan of a finished run with the same plan of a baseline: "
                    "the totals, and the kernels matched by the nodes they compute (as the "
                    "compare page matches them). Prints a markdown summary with both "
                    "permanent links; exits 1 when the plan's projected total or its kernel "
                    "count grew past --fail-over, 2 when the comparison could not be made.")
    compare.add_argument("run", help="the run's id")
    compare.add_argument("--baseline", required=True, metavar="RUN|tag:NAME",
                         help="a run's id, or tag:NAME for the baseline of the tag for the "
                              "run's graph in its team")
    compare.add_argument("--strategy", default="cost", help="the plan compared (default cost)")
    compare.add_argument("--device", help="a device both runs have (default the run's first)")
    compare.add_argument("--fail-over", default="3%", metavar="PERCENT",
                         help="the growth that counts as a regression (default 3%%)")
    _server_arguments(compare)
    compare.add_argument("--json", action="store_true",
                         help="one JSON object on stdout, the markdown in it")

    baseline = commands.add_parser(
        "baseline", help="make a run the baseline of a tag for its graph in its team",
        description="Make a finished run shared with a team the baseline of a tag (e.g. main) "
                    "for its graph in the team: later runs of the graph compare with it "
                    "(compare --baseline tag:NAME) and the team's page tracks them.")
    baseline.add_argument("run", help="the run's id")
    baseline.add_argument("--tag", required=True, help="the tag, e.g. main")
    baseline.add_argument("--team", help="the team (default the run's)")
    _server_arguments(baseline)
    baseline.add_argument("--json", action="store_true", help="one JSON object on stdout")


def _server_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("--server", metavar="URL", help=SERVER_HELP)
    command.add_argument("--token", metavar="KEY", help=TOKEN_HELP)


def _list(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _upload(args) -> int:
    run = client.upload_file(
        *args.files, wait=False, server=args.server, token=args.token, name=args.name,
        tags=_list(args.tags), devices=_list(args.devices),
        strategies=_list(args.strategies), runtime=args.runtime, visibility=args.visibility,
        team=args.team)
    if not args.json:
        print(run.url, flush=True)
    if args.wait:
        run.wait(args.timeout, _ProgressLine())
    if args.json or args.wait:
        print_result(run.summary(), args.json, lambda summary: run.table())
    return 0


class _ProgressLine:
    """A run's status on stderr while it compiles: one line rewritten in place on a terminal,
    a new line at each change elsewhere (a CI log)."""

    def __init__(self):
        self.shown = ""
        self.in_place = sys.stderr.isatty()

    def __call__(self, status: dict) -> None:
        line = client.describe_status(status)
        if line == self.shown:
            return
        if self.in_place:
            end = "\n" if status["status"] in ("done", "failed") else ""
            print(f"\r\033[K{line}", end=end, file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)
        self.shown = line


def _compare(args) -> int:
    comparison = client.compare(args.run, args.baseline, args.strategy, args.device,
                                client.parse_threshold(args.fail_over), args.server,
                                args.token)
    print_result(comparison.to_dict(), args.json, lambda result: result["markdown"].rstrip("\n"))
    return 1 if comparison.regressed else 0


def _baseline(args) -> int:
    server = client.Client(args.server, args.token)
    team = args.team or server.run(args.run).detail["team"]
    if team is None:
        raise ClientError(f"run {args.run} is not shared with a team: share it with one "
                          f"(upload --visibility team --team NAME) or name one with --team")
    baseline = server.set_baseline(team, args.tag, args.run)
    print_result(baseline, args.json, lambda b: f"{b['url']} is the baseline of {b['tag']} for "
                                          f"{b['graph']} in {b['team']}")
    return 0


COMMANDS = {"upload": _upload, "compare": _compare, "baseline": _baseline}


def print_result(result: dict, as_json: bool, format_text) -> None:
    """`result` as one JSON object on stdout, or in its human-readable form."""
    if as_json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_text(result))


def main(argv: list[str] | None = None) -> int:
    """One of the client's commands, parsed alone (`python -m compiler upload ...`)."""
    parser = argparse.ArgumentParser(prog="python -m compiler")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except ClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return CLIENT_ERROR_STATUS
