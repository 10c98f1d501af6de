"""``zeromem active`` and ``zeromem cards``: the memory lifecycle on the command line."""

from __future__ import annotations

from typing import Annotated

import typer

from .cli_common import (
    AgentOption,
    DbOption,
    JsonOption,
    UserOption,
    app,
    friendly,
    open_memory,
    print_json,
    safe,
)


@app.command()
@friendly
def active(
    budget: Annotated[int, typer.Option("--budget", help="token budget of the working set")] = 1000,
    as_of: Annotated[str | None, typer.Option("--as-of", help="the memory as it stood at this time")] = None,
    show_archived: Annotated[bool, typer.Option("--archived", help="also list what left and why")] = False,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the active memory: what stays in every prompt within BUDGET tokens (zero LLM calls)."""
    with open_memory(db, user, agent) as mem:
        result = mem.active(budget, as_of=as_of)
    if as_json:
        print_json({"budget_tokens": result.budget_tokens, "used_tokens": result.used_tokens,
                    "tokenizer": result.tokenizer, "entries": list(result.entries),
                    "archived": result.archived})
        return
    typer.echo(f"active memory: {len(result.entries)} of {result.considered} traces, "
               f"{result.used_tokens}/{result.budget_tokens} tokens ({result.tokenizer})")
    for e in result.entries:
        cues = ",".join(e.signals.get("dialogue", [])) or "-"
        typer.echo(f"[{e.trace_id} | {safe(e.session)} | {safe(e.speaker)}] Ω={e.omega:.3f} Ω_eff={e.omega_eff:.3f} "
                   f"Δn={e.newer} {e.reason} ({cues}) {_visible(e.text)}")
    if show_archived:
        for tid, why in result.archived.items():
            typer.echo(f"  left: {tid} ({why})")


@app.command()
@friendly
def cards(
    session: Annotated[str | None, typer.Option(help="only this session")] = None,
    kind: Annotated[str | None, typer.Option(help="constraint, preference, state, event, relation or fact")] = None,
    limit: Annotated[int | None, typer.Option(help="at most this many cards")] = None,
    db: DbOption = None, user: UserOption = None, agent: AgentOption = None,
    as_json: JsonOption = False,
) -> None:
    """List cards: subject–predicate–object readings of the traces, each with its source."""
    with open_memory(db, user, agent) as mem:
        found = mem.cards(session=session, kind=kind, limit=limit)
    if as_json:
        print_json(found)
        return
    for c in found:
        typer.echo(f"{c.kind:<10} {safe(c.subject)} | {safe(c.predicate)} | {safe(c.object)}   "
                   f"[{c.trace_id} | {safe(c.session)}]")


def _visible(text: str) -> str:
    """Control characters (terminal escapes) shown, not executed."""
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode() for ch in text)
