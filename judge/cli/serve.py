"""`judge serve`: the review queue, blind labelling and agreement in the browser.

    judge serve [--host 127.0.0.1] [--port 8000] [--lease SECONDS] [--db URL] [--create]
                [--allowed-host NAME]... [--allow-direct ADMIN]...
    judge serve tokens add NAME          print a new sign-in token for an annotator (once)
    judge serve tokens list [--all]      annotators and token ids (never the tokens)
    judge serve tokens revoke NAME | --id TOKEN_ID

Same database, queue and leases as `judge review` and `judge label`. Bound to 127.0.0.1
unless --host says otherwise (then it warns: put it behind TLS for a team). It opens an
existing database only (a missing or empty one is refused unless --create), and every way
of failing to start (bad options, a bad --host, a port in use) is one line and exit 2.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING

import typer

from judge.cli.common import cli_errors, die, warn
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import float_option

if TYPE_CHECKING:
    from judge.store import Store

app = typer.Typer(help="Review in the browser: queue, blind labelling, agreement.",
                  invoke_without_command=True)
tokens = typer.Typer(help="Annotators' sign-in tokens (only their hashes are stored).",
                     no_args_is_help=True)
app.add_typer(tokens, name="tokens")


#: the longest --lease (a day); an open page renews its lease every quarter of it
MAX_LEASE_S = 86_400.0
#: the shortest --lease: a page renews at most every 5 s
MIN_LEASE_S = 10.0


def _check_allowed_host(name: str) -> str:
    """A Host header pattern: a host name or IP address, `*`, or `*.domain`."""
    from judge.serve.listen import ListenError, check_host

    pattern = name.strip().lower()
    if pattern == "*":
        return pattern
    try:
        check_host(pattern[2:] if pattern.startswith("*.") else pattern)
    except ListenError:
        die(f"--allowed-host {name!r}: want a host name, an IP address, '*' or '*.domain'")
    plain = pattern.strip("[]")
    return f"[{plain}]" if ":" in plain else plain  # Host carries an IPv6 literal in brackets


def _log_to_stderr() -> None:
    """judge.serve's log lines (a direct label, …) on stderr, as the start message."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("judge: %(message)s"))
    logger = logging.getLogger("judge.serve")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


@app.callback()
def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host",
                             help="address to listen on (default loopback only)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="port (0: any free one)"),
    lease: float = float_option(300.0, "--lease", lo=MIN_LEASE_S, hi=MAX_LEASE_S,
                                help="claim lease in seconds: an open page renews it, a "
                                     "closed tab lets it expire"),
    allowed_host: list[str] = typer.Option(
        [], "--allowed-host", help="Host header to accept (repeat; e.g. the name a reverse "
                                   "proxy forwards). Default: the loopback names on "
                                   "loopback, any elsewhere"),
    secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                        help="mark cookies Secure (when served over HTTPS)"),
    n_boot: int = typer.Option(1000, "--n-boot", min=1, max=100_000,
                               help="bootstrap resamples of the agreement page"),
    allow_direct: list[str] = typer.Option(
        [], "--allow-direct", metavar="ANNOTATOR",
        help="let this annotator (an admin; repeat for several) label any item nobody else "
             "holds by its id, not only what the queue hands them; each such label is "
             "logged and marked direct"),
    create: bool = typer.Option(False, "--create",
                                help="make the database if it does not exist (or is empty)"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Review in the browser: queue, blind labelling, agreement."""
    if ctx.invoked_subcommand is not None:
        return
    with cli_errors():
        from judge.serve import ServeConfig, create_app
        from judge.serve.listen import LOOPBACK_NAMES, bind, bound_port, is_loopback, run
        from judge.serve.listen import shown as shown_address
        from judge.store.db import MissingDatabase

        patterns = [_check_allowed_host(h) for h in allowed_host]
        admins = frozenset(a.strip() for a in allow_direct if a.strip())
        if allow_direct and not admins:
            die("--allow-direct: give an annotator name")
        loopback = is_loopback(host)
        hosts = (LOOPBACK_NAMES + patterns) if loopback else (patterns or ["*"])
        try:
            store = open_database(db, create=create)
        except MissingDatabase as exc:
            die(f"{exc.message}: judge serve opens an existing database (the one judge "
                "grade or judge run filled); pass --create to start a new, empty one")
        with store:
            application = create_app(store, ServeConfig(
                lease_s=lease, n_boot=n_boot, allowed_hosts=hosts,
                secure_cookies=secure_cookies, allow_direct=admins))
            names = {t.annotator for t in store.annotators.tokens()}
            sockets = bind(host, port)  # before any message: a busy port is the only line
            if not loopback:
                warn(f"WARNING: serving on {host}, reachable from other machines. Annotator "
                     "tokens and trace text cross the network: put it behind TLS (a reverse "
                     "proxy) and pass --secure-cookies.")
            if not names:
                warn("no annotator tokens yet: make one with `judge serve tokens add NAME`")
            if admins:
                warn("direct labelling allowed for " + ", ".join(sorted(admins)) + ": they "
                     "may label any item nobody holds by its id; each such label is logged")
                for name in sorted(admins - names):
                    warn(f"--allow-direct {name}: no live token has that name (yet)")
            _log_to_stderr()
            echo(f"judge serve: {field(store.where)} on "
                 f"http://{shown_address(host, bound_port(sockets))}/ (Ctrl-C stops)", err=True)
            run(application, sockets)


def _existing(db: str | None) -> Store:
    """The database, which must exist already (listing or revoking makes no new one)."""
    from judge.store.db import MissingDatabase

    try:
        return open_database(db, create=False)
    except MissingDatabase as exc:
        die(f"{exc.message}: nothing to list or revoke")


@tokens.command("add")
def tokens_add(
    name: str = typer.Argument(..., help="the annotator's name (as labels record it)"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Make a sign-in token for NAME and print it (it is not stored, only its hash)."""
    with cli_errors(), open_database(db) as store:
        token = store.annotators.add_token(name)
    typer.echo(token)
    echo(f"token for {field(name)}: give it to them privately; it is shown only now",
         err=True)


@tokens.command("list")
def tokens_list(
    all_: bool = typer.Option(False, "--all", help="revoked tokens too"),
    as_json: bool = typer.Option(False, "--json", help="JSON lines"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Annotators with tokens, by token id (a prefix of the hash), never the tokens."""
    with cli_errors(), _existing(db) as store:
        infos = store.annotators.tokens(include_revoked=all_)
    for t in infos:
        if as_json:
            typer.echo(json.dumps(t.to_dict()))
        else:
            state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "live"
            echo(f"{field(t.annotator)}\t{t.token_id}\t{t.created_at:%Y-%m-%d %H:%M} UTC\t"
                 f"{state}")
    if not infos and not as_json:
        echo("no tokens", err=True)


@tokens.command("revoke")
def tokens_revoke(
    name: str | None = typer.Argument(None, help="revoke every token of this annotator"),
    token_id: str | None = typer.Option(None, "--id", help="revoke one token by its id"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Revoke an annotator's tokens (or one token): they sign nobody in from now on."""
    with cli_errors():
        if (name is None) == (token_id is None):
            die("give an annotator NAME or --id TOKEN_ID")
        with _existing(db) as store:
            n = store.annotators.revoke(name, token_id=token_id)
        if n == 0:
            die("no live token matched")
        echo(f"revoked {n} token{'s' if n != 1 else ''}")
