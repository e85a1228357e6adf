"""`python run.py eval`: how well a real model drives the runtime, by outcome."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio
import msgspec


def cmd_eval(args: argparse.Namespace, load_config) -> int:
    from evals.runner import format_report, run_eval, with_hub, with_worldclock
    from evals.scenarios import SETS, load_scenarios
    from llm.backends import make_backend

    config = with_worldclock(load_config(args))
    if args.set == "discovery" and not args.scenarios:
        config = with_hub(config)
    profile = args.profile or config.llm.profile
    if profile not in config.llm.profiles:
        sys.exit(f"porfiry: no profile {profile!r}; profiles: {', '.join(sorted(config.llm.profiles))}")
    try:
        scenarios = load_scenarios(args.scenarios or SETS[args.set])
    except ValueError as exc:
        sys.exit(f"porfiry: {exc}")
    if args.only:
        wanted = set(args.only.split(","))
        scenarios = [s for s in scenarios if s.id in wanted or wanted & set(s.tags)]
    if args.limit:
        scenarios = scenarios[: args.limit]
    if not scenarios:
        sys.exit("porfiry: no scenario to play")
    modes = {"both": ["progressive", "flat"], "three": ["flat", "toolsets", "discovery"]}.get(args.mode, [args.mode])
    backend = make_backend(config.llm.profiles[profile], name=profile)

    trace_file = open(args.trace, "wb") if args.trace else None  # noqa: SIM115 - closed below

    def trace(entry: dict) -> None:
        trace_file.write(msgspec.json.encode(entry) + b"\n")
        trace_file.flush()

    async def main() -> list:
        try:
            reports = []
            for mode in modes:
                print(f"eval: {len(scenarios)} scenarios, profile {profile}, mode {mode}", file=sys.stderr, flush=True)
                reports.append(await run_eval(config, scenarios, backend=backend, profile=profile, mode=mode,
                                              trace=trace if trace_file else None,
                                              scenario_set=args.scenarios or args.set))
            return reports
        finally:
            await backend.aclose()
            if trace_file:
                trace_file.close()

    reports = anyio.run(main, backend="trio")
    for report in reports:
        print(format_report(report))
        print()
    if len(reports) == 2:
        progressive, flat = reports
        print(f"progressive {progressive.success_rate:.0%} vs flat {flat.success_rate:.0%} "
              f"({progressive.mean_steps} vs {flat.mean_steps} steps per scenario, "
              f"p50 step {progressive.model_ms.p50:.0f} vs {flat.model_ms.p50:.0f} ms)")
    if args.json:
        body = reports[0] if len(reports) == 1 else {"runs": reports}
        Path(args.json).write_bytes(msgspec.json.format(msgspec.json.encode(body)))
        print(f"eval: wrote {args.json}", file=sys.stderr)
    return 0


def register(sub, load_config) -> None:
    parser = sub.add_parser("eval", help="play the eval scenarios on a real model and score them")
    parser.add_argument("--profile", help="model profile (default: the active one, `local`)")
    parser.add_argument("--set", choices=["dev", "test", "traps", "discovery"], default="dev",
                        help="dev: tune on it (default); test: report it, never tune on it; traps: no side effect is the only right outcome; "
                             "discovery: needs over a 120-tool MCP server and 16 skills (issue 53)")
    parser.add_argument("--scenarios", help="a scenario file of your own (instead of --set)")
    parser.add_argument("--mode", choices=["progressive", "flat", "both", "toolsets", "discovery", "three"], default="both",
                        help="progressive: toolsets on demand (Porfiry); flat: every tool shown from the start; both (default); "
                             "toolsets: progressive without the budget; discovery: with it; three: flat, toolsets, discovery")
    parser.add_argument("--json", help="write the report(s) as JSON here")
    parser.add_argument("--limit", type=int, default=0, help="play only the first N scenarios")
    parser.add_argument("--trace", help="write every request and reply as JSON lines here (for tuning texts)")
    parser.add_argument("--only", help="comma-separated scenario ids or tags")
    parser.set_defaults(func=lambda args: cmd_eval(args, load_config))
