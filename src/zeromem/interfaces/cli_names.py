"""``zeromem check-names``: stored scopes whose names today's rules refuse (store/names.py)."""

from __future__ import annotations

import typer

from .._internals import store_of
from ..store.names import check_names
from .cli_common import DbOption, JsonOption, app, friendly, open_memory, print_json


@app.command("check-names")
@friendly
def check_names_command(db: DbOption = None, as_json: JsonOption = False) -> None:
    """List the scopes (and API keys' scopes) whose user or agent name is now refused (an
    invisible or default-ignorable character, not in NFKC form) or reads the same as another
    scope's. Exit code 1 when there is any, 0 when every name passes."""
    with open_memory(db, None, None) as mem:
        store = store_of(mem)
        report = check_names(store.scopes(), [(key.key_id, key.scope) for key in store.api_keys()])
    if as_json:
        print_json(report.as_dict())
    else:
        typer.echo(f"checked {report.scopes} scope(s) and {report.keys} API key(s) of {mem.path}")
        for finding in report.findings:
            typer.echo(f"  {finding.where}: user={finding.user!r} agent={finding.agent!r}: {finding.problem}")
        if report.clean:
            typer.echo("every name passes")
    if not report.clean:
        raise typer.Exit(1)
