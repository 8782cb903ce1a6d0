"""`judge worker`: take grading work from a shared database until none is left.

Start any number of these on any machines pointing at one PostgreSQL database
(JUDGE_DATABASE_URL); `judge run SUITE --distributed` enqueues the work and waits.
"""

from __future__ import annotations

import typer

from judge.cli.common import cli_errors, warn
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, float_option
from judge.settings import Settings
from judge.store.records import WORK_LEASE_S


def worker(
    run_id: str | None = typer.Option(None, "--run", help="only this run's work"),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    base_url: str | None = typer.Option(None, "--base-url"),
    rpm: float | None = float_option(None, "--rpm", lo=0.0, hi=1e9, lo_open=True),
    idle_exit: float = float_option(30.0, "--idle-exit", lo=0.0, hi=A_WEEK_S,
                                    help="stop after this many seconds with nothing to claim"),
    lease: float = float_option(WORK_LEASE_S, "--lease", lo=1.0, hi=A_WEEK_S,
                                help="lease seconds; a killed worker's items go to others "
                                     "after this"),
    database: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Claim grading work (leases, SKIP LOCKED), grade it, store verdicts; repeat."""
    from judge.pipeline.worker import RunProviders, work_loop, worker_name

    with cli_errors():
        settings = Settings.load(concurrency=concurrency, base_url=base_url, rpm=rpm,
                                 database_url=database)
        with open_database(settings=settings) as store:
            stats = work_loop(store, RunProviders(store, settings), settings,
                              run_id=run_id, idle_exit_s=idle_exit, lease_s=lease,
                              on_problem=lambda text: warn(f"warning: {text}"))
    typer.echo(f"worker {worker_name()}: graded {stats.items} item(s), "
               f"{stats.provider_calls} provider call(s), {stats.cache_hits} from cache")
