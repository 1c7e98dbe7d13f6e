"""`crontick init`: write into an existing repository what a Vercel + GitHub Actions deploy needs, never overwriting silently.

It writes the four Vercel function files (each only imports `crontick.app.app`), the GitHub
workflow that ticks every 15 minutes (with `--waker`, once a day: the safety net under the
waker's own bookings, whose variables it prints), and merges crontick's functions, cron and rewrites into the
repository's `vercel.json` without removing or changing anything of the user's. A file that exists
with other content is left alone unless `--force`; then nothing at all is written, so a refused
run changes nothing. Every target is checked before any is read or written: a symlink (on the file
or on a folder above it) that leads out of `--dir`, or to nothing, is refused in one line.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from crontick.errors import ConfigError
from crontick.settings.wakeups import WAKER_NEEDS, WAKERS

FUNCTION = '''"""Vercel function for {route}: only exposes the crontick ASGI app (written by `crontick init`)."""

from crontick.app import app

__all__ = ["app"]
'''
FUNCTIONS = {
    "api/cron/tick.py": "/api/cron/tick",
    "api/health.py": "/api/health",
    "api/hooks/[name].py": "/api/hooks/{name} (inbound webhooks)",
    "api/admin.py": "/admin and /api/admin (vercel.json rewrites them here)",
}
# vercel.json `functions` keys are globs, where `[name]` would be a character class: the hook function's key
# names its folder instead.
FUNCTION_KEYS = {path: "api/hooks/*.py" if "[" in path else path for path in FUNCTIONS}
WORKFLOW = ".github/workflows/tick.yml"
VERCEL_JSON = "vercel.json"
TARGETS = (*FUNCTIONS, WORKFLOW, VERCEL_JSON)
MAX_DURATION_SECONDS = 60
# A daily backstop: Vercel's Hobby plan refuses anything more frequent; the GitHub workflow ticks every 15 minutes.
VERCEL_CRON = {"path": "/api/cron/tick", "schedule": "17 4 * * *"}
# The admin is one function: its pages and its JSON API are routed to it. Never "/": that is the app's own.
REWRITES = [
    {"source": "/admin", "destination": "/api/admin"},
    {"source": "/admin/:path*", "destination": "/api/admin"},
    {"source": "/api/admin/:path*", "destination": "/api/admin"},
]
NEXT_STEPS = """next:
  1. Set in the Vercel project's environment: DATABASE_URL, CRON_SECRET (32+ characters),
     CRONTICK_HANDLERS (your modules with @crontick.handler, e.g. myapp.jobs) and, for the admin,
     CRONTICK_ADMIN_SECRET (32+ characters, not CRON_SECRET).
  2. Run `crontick migrate` against DATABASE_URL before the first deploy.
  3. In the GitHub repository, add the secrets CRONTICK_URL (the deployment's base URL) and
     CRON_SECRET."""
FIXED_COST = """     On a private repository a 15-minute schedule bills about 2,880 Actions minutes a
     month (the Deploy > GitHub Actions page says how to stay within the free 2,000)."""
# The workflow's schedule as packaged, and what `--waker` puts in its place: the daily safety net (at
# vercel.json's daily time), under the bookings the waker makes at the instant work comes due.
FIXED_SCHEDULE = """    # Every 15 minutes, off the top of the hour: GitHub delays and drops the most runs at :00.
    - cron: "7,22,37,52 * * * *"
"""
SAFETY_NET_SCHEDULE = f"""    # Once a day: the safety net. CRONTICK_WAKER books each call at the instant work comes due;
    # this run catches a booking that failed or a delivery that never came (`crontick init --waker`).
    - cron: "{VERCEL_CRON["schedule"]}"
"""
# What the waker of `--waker` needs beyond WAKER_NEEDS (crontick.settings.wakeups), and where each lives.
WAKER_EXTRA = {
    "vercel-queue": (
        "VERCEL_QUEUE_TOKEN: a Queue API token, or turn on Vercel's OIDC (VERCEL_OIDC_TOKEN)",
        "the topic's subscriber, in pyproject.toml (pip install 'crontick[vercel-queue]'):\n"
        "       [[tool.vercel.subscribers]]\n"
        '       entrypoint = "crontick.vercel_subscriber:run_tick"',
    ),
    "eventbridge": ("the safety net may instead be a daily EventBridge rule that invokes the function",),
    "cloudtasks": ("the safety net may instead be a daily Cloud Scheduler job with the same OIDC identity",),
}


def next_steps(waker: str) -> str:
    """What to do after `init`: the settings, the migration, the secrets; with a waker, its variables and the cost."""
    if waker == "none":
        return NEXT_STEPS + "\n" + FIXED_COST
    lines = [f"CRONTICK_WAKER={waker}"]
    lines += [f"{variable}: {expected}" for _, variable, expected in WAKER_NEEDS.get(waker, ())]
    lines += WAKER_EXTRA.get(waker, ())
    shown = "\n".join(f"     - {line}" for line in lines)
    return (
        f"{NEXT_STEPS}\n"
        f"  4. The waker ({waker}) books each tick at the instant work comes due; set:\n{shown}\n"
        "     The workflow now runs once a day as the safety net: about a wake-up per instant work falls due plus\n"
        "     one a day instead of 96, about 30 Actions minutes a month instead of 2,880, and a database\n"
        "     that can suspend between wake-ups (see Precise wake-ups in the docs)."
    )


def workflow_text(waker: str) -> str:
    """The packaged tick workflow: every 15 minutes, or with a waker, once a day."""
    text = resources.files("crontick.cli").joinpath("deploy", "tick.yml").read_text(encoding="utf-8")
    if waker == "none":
        return text
    if FIXED_SCHEDULE not in text:  # the packaged file changed without this module: a bug, never the user's
        raise ConfigError("init: expected the packaged tick.yml to hold the 15-minute schedule, got another one")
    return text.replace(FIXED_SCHEDULE, SAFETY_NET_SCHEDULE)


@dataclass(frozen=True)
class Planned:
    path: str
    text: str
    action: str  # "create", "update" (a merge into an existing file), "unchanged" or "conflict"
    note: str = ""


def add_parser(sub: Any, func: Any) -> None:
    p = sub.add_parser(
        "init", help="write the Vercel functions, vercel.json entries and the tick workflow into this repository"
    )
    p.add_argument("--dir", type=Path, default=Path("."), help="the repository's root (default: here)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist with other content")
    p.add_argument(
        "--waker",
        choices=[w for w in WAKERS if w != "none"],
        default="none",
        help="set up precise wake-ups (CRONTICK_WAKER): a daily safety-net workflow instead of the 15-minute one,"
        " and the variables to set",
    )
    p.set_defaults(func=func)


def plan(root: Path, *, force: bool, waker: str = "none") -> list[Planned]:
    """What `init` would do to each file under `root`; pure apart from reading the files."""
    wanted = {path: FUNCTION.format(route=route) for path, route in FUNCTIONS.items()}
    wanted[WORKFLOW] = workflow_text(waker)
    planned = [_whole_file(root, path, text, force=force) for path, text in wanted.items()]
    planned.append(_merged_vercel_json(root))
    return planned


def run(args: argparse.Namespace) -> int:
    root: Path = args.dir
    if not root.is_dir():
        raise ConfigError(f"init: expected --dir to be an existing directory, got {str(root)!r}")
    real = {path: real_target(root, path) for path in TARGETS}  # every one, before any is read or written
    planned = plan(root, force=args.force, waker=args.waker)
    conflicts = [p for p in planned if p.action == "conflict"]
    if conflicts:
        for p in conflicts:
            print(f"exists, differs: {p.path} (not overwritten; --force replaces it)")
        print("crontick init wrote nothing")
        return 1
    for p in planned:
        if p.action in ("create", "update"):
            _write(real[p.path], p)
        print(f"{p.action:<9} {p.path}{'  (' + p.note + ')' if p.note else ''}")
    print(next_steps(args.waker))
    return 0


def real_target(root: Path, path: str) -> Path:
    """Where writing `path` under `root` would land, with every symlink on the way resolved.

    ConfigError (nothing written yet) when a symlink, on the file or on a folder above it, leads
    out of `root` or to nothing, when a folder on the way is a file, or when the file is a folder.
    """
    home = root.resolve()
    here = home
    parts = Path(path).parts
    for depth, part in enumerate(parts, start=1):
        step = here / part
        if step.is_symlink():
            shown = "/".join(parts[:depth])
            try:
                step = step.resolve()
            except (OSError, RuntimeError):  # a loop: RuntimeError before Python 3.13, OSError from it on
                raise ConfigError(f"init: expected {shown} to lead somewhere, got a symlink loop") from None
            if not step.is_relative_to(home):
                raise ConfigError(f"init: expected {shown} to stay inside {home}, got a symlink to {step}")
            if not step.exists():
                raise ConfigError(f"init: expected {shown} to lead to something, got a dangling symlink to {step}")
        last = depth == len(parts)
        if step.exists() and not (step.is_file() if last else step.is_dir()):
            wanted = "a file" if last else "a folder"
            raise ConfigError(f"init: expected {'/'.join(parts[:depth])} to be {wanted}, got something else")
        here = step
    return here


def _write(target: Path, planned: Planned) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(planned.text, encoding="utf-8")
    except OSError as exc:  # checked beforehand, so only the disk or a permission is left to fail
        raise ConfigError(f"init: expected to write {planned.path}, got {type(exc).__name__}: {exc}") from None


def merge_vercel(config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`config` with crontick's functions, cron and rewrites added, nothing of the user's removed; and what was added."""
    merged = dict(config)
    added: list[str] = []
    functions = dict(merged.get("functions") or {})
    for path, key in FUNCTION_KEYS.items():
        if not any(_glob_matches(pattern, path) for pattern in functions):
            functions[key] = {"maxDuration": MAX_DURATION_SECONDS}
            added.append(f"function {key}")
    merged["functions"] = functions
    crons = list(merged.get("crons") or [])
    if not any(isinstance(c, dict) and c.get("path") == VERCEL_CRON["path"] for c in crons):
        crons.append(dict(VERCEL_CRON))
        added.append(f"cron {VERCEL_CRON['path']}")
    merged["crons"] = crons
    rewrites = list(merged.get("rewrites") or [])
    sources = {r.get("source") for r in rewrites if isinstance(r, dict)}
    for rewrite in REWRITES:
        if rewrite["source"] not in sources:
            rewrites.append(dict(rewrite))
            added.append(f"rewrite {rewrite['source']}")
    merged["rewrites"] = rewrites
    return merged, added


def _glob_matches(pattern: str, path: str) -> bool:
    """Whether a vercel.json `functions` key (a glob such as `api/**/*.py`) already covers `path`."""
    regex = "".join(
        "(?:.*/)?" if part == "**/" else ".*" if part == "**" else "[^/]*" if part == "*" else _literal(part)
        for part in re.split(r"(\*\*/?|\*)", pattern)
    )
    return re.fullmatch(regex, path) is not None


def _literal(text: str) -> str:
    """A glob's text between wildcards: `[abc]` is a character class, as Vercel reads it; the rest is literal."""
    return "".join(
        f"[{re.escape(m[1])}]" if m[1] is not None else re.escape(m[2])
        for m in re.finditer(r"\[([^\]]*)\]|([^\[]+|\[)", text)
    )


def _whole_file(root: Path, path: str, text: str, *, force: bool) -> Planned:
    target = root / path
    if not target.exists():
        return Planned(path, text, "create")
    if target.read_text(encoding="utf-8") == text:
        return Planned(path, text, "unchanged")
    return Planned(path, text, "create" if force else "conflict", "replaced" if force else "")


def _merged_vercel_json(root: Path) -> Planned:
    target = root / VERCEL_JSON
    config: Any = {"$schema": "https://openapi.vercel.sh/vercel.json"}
    if target.exists():
        try:
            config = json.loads(target.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigError(f"init: expected {VERCEL_JSON} to be JSON, got {type(exc).__name__}: {exc}") from None
        if not isinstance(config, dict):
            raise ConfigError(f"init: expected {VERCEL_JSON} to hold a JSON object, got {type(config).__name__}")
        for key in ("functions", "crons", "rewrites"):
            kind = dict if key == "functions" else list
            if key in config and not isinstance(config[key], kind):
                raise ConfigError(
                    f"init: expected {VERCEL_JSON} {key!r} to be a {kind.__name__}, got {config[key]!r:.60}"
                )
    merged, added = merge_vercel(config)
    text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    if not added:
        return Planned(VERCEL_JSON, text, "unchanged")
    action = "update" if target.exists() else "create"
    return Planned(VERCEL_JSON, text, action, "added " + ", ".join(added))
