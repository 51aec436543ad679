"""Workspace: the objects one command needs, built from its options.

Abstractions
------------
Workspace -- a loaded spec, its ledger (default `.bisectk/ledger.db` beside the spec), the
             event bus with the terminal reporter subscribed when output is interactive, and
             a Runner factory. Commands in cli.py build one and hand its parts to the engine.
apply_sets -- `--set NAME=VALUE` overrides applied to a configuration, validated.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bisectk.errors import BisectkError
from bisectk.events import EventBus
from bisectk.ledger import Ledger
from bisectk.report.terminal import TerminalReporter
from bisectk.run.runner import Runner
from bisectk.spec import Config, Spec, adhoc_spec, load_spec, parse_value


def default_ledger(spec_path: Path) -> Path:
    return spec_path.resolve().parent / ".bisectk" / "ledger.db"


def apply_sets(spec: Spec, config: Config, sets: list[str]) -> Config:
    config = dict(config)
    for item in sets or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BisectkError(f"--set {item!r}: expected NAME=VALUE")
        if name not in spec.good:
            raise BisectkError(f"--set {item!r}: {name!r} is not a factor of {spec.path} "
                               f"(factors: {', '.join(spec.factors)})")
        config[name] = parse_value(value)
    return config


def split_command(text: str, option: str) -> list[str]:
    import shlex
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise BisectkError(f"{option} {text!r}: {exc}") from None
    if not argv:
        raise BisectkError(f"{option}: empty command")
    return argv


def subject(spec_path: Path | None, run: str | None, build: str | None, *, cwd: Path,
            config: str = "bad", sets: list[str] | None = None, timeout: float | None = None,
            repeat: int | None = None, name: str = "subject") -> tuple[Spec, Config]:
    """The subject of a diff/bisect/triage: a spec (with the configuration to run), or an ad-hoc
    `--run CMD` with an optional `--build CMD`. Exactly one of the two must be given."""
    if (spec_path is None) == (run is None):
        raise BisectkError("give either a SPEC file or --run 'CMD' (not both, not neither)")
    if config not in ("good", "bad"):
        raise BisectkError(f"--config must be good or bad, not {config!r}")
    if run is not None:
        if sets:
            raise BisectkError("--set needs a SPEC (a --run command has no factors)")
        spec = adhoc_spec(split_command(run, "--run"), name=name, cwd=cwd,
                          build=split_command(build, "--build") if build else None,
                          timeout=timeout, repeat=repeat or 1)
        return spec, {}
    spec = load_spec(spec_path)
    if build:
        spec.build = split_command(build, "--build")
    if timeout:
        spec.timeout = timeout
    if repeat:
        spec.repeat = repeat
    return spec, apply_sets(spec, spec.endpoint(config), sets or [])


@dataclass
class Workspace:
    spec: Spec
    ledger: Ledger
    events: EventBus = field(default_factory=EventBus)
    reporter: TerminalReporter | None = None
    fresh: bool = False  # ignore stored runs: a new ledger namespace for this invocation
    closers: list = field(default_factory=list)  # e.g. warm worker pools, closed with the workspace

    @classmethod
    def open(cls, spec_path: str | Path | Spec, ledger_path: str | Path | None = None, *,
             quiet: bool = False, fresh: bool = False) -> Workspace:
        spec = spec_path if isinstance(spec_path, Spec) else load_spec(spec_path)
        ledger = Ledger(Path(ledger_path) if ledger_path else default_ledger(Path(spec.path)))
        ws = cls(spec, ledger, fresh=fresh)
        if not quiet and sys.stderr.isatty():
            ws.reporter = TerminalReporter(reference=spec.good)
            ws.events.subscribe(ws.reporter)
        return ws

    @property
    def log_root(self) -> Path:
        return self.ledger.path.parent / "logs"

    def runner(self, session: int | None = None, **kwargs) -> Runner:
        runner = Runner(self.spec, self.ledger, events=self.events, session=session,
                        log_root=self.log_root, **kwargs)
        if self.fresh:
            # a namespace of its own: earlier runs are not answered, and later ones stay separate
            runner.fingerprint += f"#fresh-{session if session is not None else time.time_ns()}"
        return runner

    def close(self) -> None:
        for fn in self.closers:
            fn()
        if self.reporter:
            self.reporter.close()
        self.ledger.close()
