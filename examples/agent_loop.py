"""Chat with an LLM whose memory is zeromem, and see what each turn costs.

Every turn is stored verbatim; the prompt holds the live thread plus the evidence zeromem
finds for what you just said, inside one token budget; the only LLM call is the reply.

    # talk to any OpenAI-compatible server (vLLM, llama.cpp, Ollama...); key from OPENAI_API_KEY
    python examples/agent_loop.py --db /tmp/chat.db --base-url http://localhost:8000/v1 --model NAME

    # offline: no --base-url. Turns are stored and the prompt that WOULD be sent is printed
    # with its token accounting; nothing is called. --import seeds memory so retrieval shows.
    python examples/agent_loop.py --db /tmp/chat.db --import examples/locomo_moving_city.json \
        --name Priya --say "Do you remember where I live now?" --say "What is my cat called?"

Without ``--say`` it reads turns from the terminal until an empty line, ``/quit`` or EOF.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from zeromem import Memory, ZeromemError
from zeromem.agent import AgentLoop, LoopTotals, TurnResult
from zeromem.reader import OpenAICompatReader, ReaderError


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", help="memory file (default: $ZEROMEM_DB or ~/.zeromem/memory.db)")
    parser.add_argument("--user", help="user id of the memory scope")
    parser.add_argument("--agent", help="agent id of the memory scope")
    parser.add_argument("--session", help="session id of this conversation (default: a new one; "
                                          "give an old one to resume it)")
    parser.add_argument("--import", dest="import_file", metavar="FILE",
                        help="first import a LoCoMo / OpenAI-chat / JSONL file into the scope "
                             "(it is imported again on every run: use a fresh --db)")
    parser.add_argument("--say", action="append", default=[], metavar="TEXT",
                        help="a scripted user turn (repeatable); without it, read from stdin")
    parser.add_argument("--base-url", help="OpenAI-compatible API root, e.g. http://localhost:8000/v1; "
                                           "without it, a dry run that prints the prompt")
    parser.add_argument("--model", help="the served model's name (needed with --base-url)")
    parser.add_argument("--max-tokens", type=int, default=256, help="reply length cap (default 256)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--budget", type=int, default=2000,
                        help="token budget of the whole prompt (default 2000)")
    parser.add_argument("--k", type=int, default=10, help="evidence searched per turn (default 10)")
    parser.add_argument("--live-turns", type=int, default=6,
                        help="turns of this session kept verbatim in the prompt (default 6)")
    parser.add_argument("--name", default="user", help="speaker name of your turns")
    parser.add_argument("--assistant-name", default="assistant", help="speaker name of the replies")
    args = parser.parse_args(argv)
    if args.base_url and not args.model:
        parser.error("--model is required with --base-url")
    return args


def show_prompt(result: TurnResult) -> None:
    print("----- prompt that would be sent -----")
    for message in result.messages:
        print(f"[{message['role']}]")
        print(message["content"])
    print("-------------------------------------")


def show_accounting(result: TurnResult) -> None:
    source = "estimated" if result.usage_estimated else "server usage"
    print(f"  tokens: prompt {result.prompt_tokens} ({source}), completion {result.completion_tokens}"
          f" | counted {result.prompt_tokens_counted}/{result.budget_tokens} budget"
          f" | whole history stuffed {result.baseline_tokens}"
          f" | saved {result.saved_tokens} ({result.saving_ratio:.1%})"
          f" | memory LLM calls {result.memory_llm_calls}")
    print(f"  shown traces: {', '.join(result.shown_trace_ids) or '(none)'}")
    for warning in result.warnings:
        print(f"  warning: {warning}")


def show_totals(totals: LoopTotals, tokenizer: str) -> None:
    print(f"totals: {totals.turns} turn(s), {totals.reader_calls} reader call(s), "
          f"{totals.failed_turns} failed; reader tokens {totals.prompt_tokens} prompt + "
          f"{totals.completion_tokens} completion ({totals.estimated_turns} turn(s) estimated); "
          f"prompt {totals.prompt_tokens_counted} vs whole history {totals.baseline_tokens}: "
          f"saved {totals.saved_tokens} ({totals.saving_ratio:.1%}); "
          f"memory LLM calls {totals.memory_llm_calls}")
    print(f"counted with {tokenizer}")


def user_turns(args: argparse.Namespace):
    """The scripted turns, or lines typed at the prompt."""
    if args.say:
        yield from args.say
        return
    while True:
        try:
            line = input(f"{args.name}> ")
        except EOFError:
            return
        if not line.strip() or line.strip() == "/quit":
            return
        yield line


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    reader = None
    if args.base_url:
        try:
            reader = OpenAICompatReader(args.base_url, args.model, max_tokens=args.max_tokens,
                                        timeout_s=args.timeout)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        memory = Memory(args.db, user=args.user, agent=args.agent)
    except ZeromemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with memory:
        try:
            if args.import_file:
                imported = memory.import_file(args.import_file)
                count = sum(len(ids) for ids in imported.values())
                print(f"imported {count} traces from {args.import_file}")
            loop = AgentLoop(memory, reader, session=args.session, budget_tokens=args.budget,
                             k=args.k, live_turns=args.live_turns, user_speaker=args.name,
                             assistant_speaker=args.assistant_name)
        except ZeromemError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        mode = f"model {args.model} at {args.base_url}" if reader else "dry run, no LLM is called"
        print(f"session {loop.session} in {memory.path} ({mode})")
        status = 0
        for text in user_turns(args):
            try:
                result = loop.turn(text)
            except ReaderError as exc:
                print(f"error: {exc}\n  (your turn was stored; nothing was lost)", file=sys.stderr)
                status = 1
                if args.say:
                    break
                continue
            except ZeromemError as exc:
                print(f"error: {exc}", file=sys.stderr)
                status = 2
                if args.say:
                    break
                continue
            if result.text is None:
                show_prompt(result)
            else:
                print(f"{args.assistant_name}> {result.text}")
            show_accounting(result)
        show_totals(loop.totals, loop.tokenizer)
    return status


if __name__ == "__main__":
    sys.exit(main())
