"""`judge serve`: the review queue, blind labelling and agreement in the browser.

    judge serve [--host 127.0.0.1] [--port 8000] [--lease SECONDS] [--db URL]
    judge serve tokens add NAME          print a new sign-in token for an annotator (once)
    judge serve tokens list [--all]      annotators and token ids (never the tokens)
    judge serve tokens revoke NAME | --id TOKEN_ID

Same database, queue and leases as `judge review` and `judge label`. Bound to 127.0.0.1
unless --host says otherwise (then it warns: put it behind TLS for a team).
"""

from __future__ import annotations

import ipaddress
import json

import typer

from judge.cli.common import cli_errors, die, warn
from judge.cli.console import echo, field
from judge.cli.database import DB_HELP, open_database
from judge.cli.numbers import A_WEEK_S, float_option

app = typer.Typer(help="Review in the browser: queue, blind labelling, agreement.",
                  invoke_without_command=True)
tokens = typer.Typer(help="Annotators' sign-in tokens (only their hashes are stored).",
                     no_args_is_help=True)
app.add_typer(tokens, name="tokens")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@app.callback()
def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host",
                             help="address to listen on (default loopback only)"),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="port (0: any free one)"),
    lease: float = float_option(300.0, "--lease", lo=1.0, hi=A_WEEK_S,
                                help="claim lease in seconds: an open page renews it, a "
                                     "closed tab lets it expire"),
    allowed_host: list[str] = typer.Option(
        [], "--allowed-host", help="Host header to accept when not on loopback (repeat; "
                                   "default any)"),
    secure_cookies: bool = typer.Option(False, "--secure-cookies",
                                        help="mark cookies Secure (when served over HTTPS)"),
    n_boot: int = typer.Option(1000, "--n-boot", min=1,
                               help="bootstrap resamples of the agreement page"),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Review in the browser: queue, blind labelling, agreement."""
    if ctx.invoked_subcommand is not None:
        return
    with cli_errors():
        if lease <= 0:
            die("--lease must be positive")
        import uvicorn

        from judge.serve import ServeConfig, create_app

        loopback = _loopback(host)
        if not loopback:
            warn(f"WARNING: serving on {host}, reachable from other machines. Annotator "
                 "tokens and trace text cross the network: put it behind TLS (a reverse "
                 "proxy) and pass --secure-cookies.")
        hosts = ["127.0.0.1", "localhost", "::1", "[::1]"] if loopback else \
            (list(allowed_host) or ["*"])
        with open_database(db) as store:
            n = len(store.annotators.tokens())
            if n == 0:
                warn("no annotator tokens yet: make one with `judge serve tokens add NAME`")
            application = create_app(store, ServeConfig(
                lease_s=lease, n_boot=n_boot, allowed_hosts=hosts,
                secure_cookies=secure_cookies))
            shown = f"[{host}]" if ":" in host else host
            echo(f"judge serve: {field(store.where)} on http://{shown}:{port}/ "
                 f"(Ctrl-C stops)", err=True)
            uvicorn.run(application, host=host, port=port, log_level="warning",
                        server_header=False, proxy_headers=False)


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
    with cli_errors(), open_database(db) as store:
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
        with open_database(db) as store:
            n = store.annotators.revoke(name, token_id=token_id)
        if n == 0:
            die("no live token matched")
        echo(f"revoked {n} token{'s' if n != 1 else ''}")
