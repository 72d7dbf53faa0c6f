"""The ``autodsl`` command: REPL, script files, or ``-c SOURCE``.

Exit status: 0 on success, 1 when a script fails (stderr shows
``file:line:col: message``, the line and a caret), 2 on bad command-line
usage (including a script file that cannot be read), 130 on Ctrl-C. No Python
traceback is ever shown: anything unexpected is one ``internal error`` line.
"""
from __future__ import annotations

import argparse
import sys

import autodsl
from autodsl.cli import repl
from autodsl.cli.params import parse_sets
from autodsl.cli.progress import ClearingWriter, ProgressLine
from autodsl.cli.script_input import read_script, read_stdin, refusal
from autodsl.cli.source_arg import split_source
from autodsl.core.limits import parse_size
from autodsl.core.text_input import DEFAULT_SOURCE_LIMIT, TextInputError
from autodsl.errors import DSLError
from autodsl.session import Session


__all__ = ["main", "build_parser"]


def _version() -> str:
    return autodsl.__version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="autodsl",
        description="A REPL and scripting language for differentiable expressions. "
                    "With no FILE and no -c, starts the REPL (or runs standard input "
                    "when it is not a terminal).")
    p.add_argument("files", nargs="*", metavar="FILE.ad",
                   help="script files to run, in order, in one session (- reads standard input)")
    p.add_argument("-c", dest="source", metavar="SOURCE", help="run SOURCE as a script")
    p.add_argument("--device", choices=["cpu", "cuda", "dask"], default="cpu", help="default device (default: cpu)")
    p.add_argument("--scheduler", default=None, metavar="ADDR",
                   help="device dask: the dask scheduler's address (tcp://host:8786), or threads or "
                        "synchronous (default: a LocalCluster started on first use)")
    p.add_argument("--workers", type=_workers, default=None, metavar="N",
                   help="device dask: worker processes of the LocalCluster (default: 2)")
    p.add_argument("--dtype", choices=["float32", "float64"], default=None,
                   help="default floating dtype (default: float64)")
    p.add_argument("--trace", action="store_true", help="print a step-by-step trace of every backward")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                   help="define NAME before the scripts run (repeatable): a number, true, false or none "
                        "as the language reads it, else the text as a string (--set N=1000 --set name=abc)")
    p.add_argument("--anomaly", action="store_const", const="warn", default=None,
                   help="anomaly mode: warn (once per site) about the op that first makes a nan or inf "
                        "from finite values, forward or backward")
    p.add_argument("--anomaly-raise", dest="anomaly", action="store_const", const="raise",
                   help="anomaly mode that stops the script with an error at the first nan or inf")
    p.add_argument("--time-limit", type=_seconds, default=None, metavar="S",
                   help="stop a script that runs longer than S seconds (wall clock) with a limit error")
    p.add_argument("--memory-limit", type=_size, default=None, metavar="SIZE",
                   help="bound the tensors, strings and lists a script holds to SIZE: bytes, or "
                        "with K, M, G or T (512M, 2G; KiB, MiB, GiB: powers of 1024)")
    p.add_argument("--step-limit", type=_steps, default=None, metavar="N",
                   help="stop a script after N interpreter steps (statements, loop iterations, calls)")
    p.add_argument("--source-limit", type=_size, default=DEFAULT_SOURCE_LIMIT, metavar="SIZE",
                   help="refuse a script file, standard input or included file larger than SIZE "
                        "(default: 16M), before reading it whole")
    p.add_argument("--no-history", action="store_true",
                   help="REPL: do not read or write the history file "
                        "($XDG_DATA_HOME/autodsl/history; AUTODSL_NO_HISTORY=1 does the same)")
    p.add_argument("--version", action="version", version=f"autodsl {_version()}")
    return p


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (give one above 0, such as 2.5)")
    return value


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _steps(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of steps (give a whole number above 0)")
    return value


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of worker processes (give a whole number above 0)")
    return value


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001
        pass


def _read(path: str, parser: argparse.ArgumentParser, limit: int) -> str:
    try:
        return read_script(path, limit)
    except TextInputError as e:
        parser.error(refusal(path, e))
    except FileNotFoundError:
        parser.error(f"cannot open {path}: no such file")
    except IsADirectoryError:
        parser.error(f"cannot open {path}: it is a directory")
    except PermissionError:
        parser.error(f"cannot open {path}: permission denied")
    except OSError as e:
        parser.error(f"cannot open {path}: {e.strerror or e}")
    raise AssertionError("unreachable")


def _stdin(parser: argparse.ArgumentParser, limit: int) -> str:
    try:
        return read_stdin(limit)
    except TextInputError as e:
        parser.error(refusal("standard input", e))
    except OSError as e:
        parser.error(f"cannot read standard input: {e.strerror or e}")
    raise AssertionError("unreachable")


def _progress_line(session):
    """A progress bar for long loops on stderr, only when stderr is a terminal."""
    import contextlib
    try:
        tty = sys.stderr is not None and sys.stderr.isatty()
    except Exception:  # noqa: BLE001
        tty = False
    if not tty:
        return contextlib.nullcontext()
    progress = ProgressLine()
    session.out = ClearingWriter(progress, session.out)
    return progress.running()


def _run_sources(session, sources: list[tuple[str, str]]) -> int:
    try:
        # parse every file first: a syntax error anywhere runs nothing
        programs = [session.parse(text, name) for name, text in sources]
        with _progress_line(session):
            for program in programs:
                session.run(program)
    except DSLError as e:
        _flush_stdout()
        sys.stderr.write(e.render() + "\n")
        return 1
    return 0


def _main(argv) -> int:
    parser = build_parser()
    # `-c -pi`: the source is whatever follows -c (argparse would read `-pi` as an option)
    argv, source = split_source(parser, list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if source is not None:
        args.source = source
    if args.source is not None and args.files:
        parser.error("give either -c SOURCE or script files, not both")
    try:
        variables = parse_sets(args.sets)
    except ValueError as e:
        parser.error(str(e))
    sources: list[tuple[str, str]] = []
    if args.source is not None:
        sources.append(("<string>", args.source))
    for path in args.files:
        if path == "-":                       # the usual spelling of standard input
            sources.append(("<stdin>", _stdin(parser, args.source_limit)))
        else:
            sources.append((path, _read(path, parser, args.source_limit)))

    try:
        session = Session(device=args.device, dtype=args.dtype, trace=args.trace, anomaly=args.anomaly,
                          time_limit=args.time_limit, memory_limit=args.memory_limit,
                          step_limit=args.step_limit, source_limit=args.source_limit,
                          scheduler=args.scheduler, workers=args.workers)
        for name, value in variables.items():
            session[name] = value
    except DSLError as e:
        sys.stderr.write(f"autodsl: {e.render()}\n")
        return 1

    with session:       # (closes what it started: a dask LocalCluster)
        if sources:
            return _run_sources(session, sources)
        if sys.stdin is not None and not sys.stdin.isatty():
            return _run_sources(session, [("<stdin>", _stdin(parser, args.source_limit))])
        rc = repl.main(session, history=not args.no_history)
        return int(rc or 0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``autodsl`` command; returns the exit status."""
    try:
        return _main(argv)
    except SystemExit as e:  # argparse: --help, --version, usage errors (2)
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        _flush_stdout()
        sys.stderr.write("autodsl: interrupted\n")
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = None  # silence the flush at exit
        except Exception:  # noqa: BLE001
            pass
        return 1
    except RecursionError:
        sys.stderr.write("autodsl: internal error: nesting too deep\n")
        return 1
    except Exception as e:  # noqa: BLE001 - never a traceback
        _flush_stdout()
        msg = str(e).splitlines()[0] if str(e) else ""
        sys.stderr.write(f"autodsl: internal error: {type(e).__name__}: {msg}\n")
        return 1
