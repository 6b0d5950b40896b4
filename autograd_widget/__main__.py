"""The standalone page without Jupyter.

- `python -m autograd_widget demo --html PATH`: the tour's graph (the headless counterpart of the
  tour notebook: it builds the tour's MLP, captures its backward graph, records the whole
  step-through and writes one offline HTML page, no kernel needed);
- `python -m autograd_widget FILE.awrec --html PATH`: a saved recording of a real backward
  (`aw.record(...).save(FILE)`, e.g. one per rank of a distributed job), replayed in the engine's
  own order, the failing node drawn failed; it needs neither the model nor its graph. A file
  from anyone is safe to pass (`aw.load_recording`'s limits; `--max-manifest-bytes`,
  `--max-tensor-bytes` and `--max-inflation` raise them);
- `python -m autograd_widget FILE.awwatch --html PATH`: a saved watch (`aw.watch(...)`): the
  timeline above its opening step's graph. With `{rank}` in the name (`'run_{rank}.awwatch'`,
  `'fail_{rank}.awrec'`, quoted for the shell), every rank's file: one page holding every rank,
  with a rank selector, opening on the rank where it broke.

Every problem (a file that is not a readable recording, a limit, a path that cannot be written)
is one line, `error: ...`, and exit status 2; never a traceback. The page is written beside its
path and renamed: a failure leaves the previous page as it was. Exit status 0: the page was
written.

What it prints is safe for any terminal: a file name, a manifest key or a message from a file
may hold terminal escape codes, other control characters or bidirectional overrides, and each
such character is printed escaped (`\\x1b`, `\\u202e`), never raw (`terminal_text`); a character
the output's encoding cannot hold (an ASCII-only or strict stdout) is escaped too, so printing
never fails after the page was written.
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from typing import TextIO

__all__ = ["main", "say", "terminal_text"]

#: Unicode categories printed escaped: controls (Cc: ESC, CR, ...), format characters (Cf: the
#: bidirectional overrides and isolates, zero-width characters), line and paragraph
#: separators, unpaired surrogates (an undecodable byte of a file name) and private use.
_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})

#: The demo page's paragraph under its title.
_DEMO_DESCRIPTION = (
    "The tour's model: a small MLP (Linear 4\u21928, ReLU, Linear 8\u21928, ReLU, Linear 8\u21923) "
    "with a cross-entropy loss on 16 random samples. Each step runs one node of loss.backward(), "
    "in the order PyTorch's engine runs them; the edges show the gradients as they flow."
)


def _tour_widget(orientation: str):
    import torch

    import autograd_widget as aw

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.ReLU(),
        torch.nn.Linear(8, 3),
    )
    inputs, target = torch.randn(16, 4), torch.randint(0, 3, (16,))
    with aw.track(model):
        logits = model(inputs)
    loss = torch.nn.functional.cross_entropy(logits, target)
    return aw.explore(loss, model=model, collapse="none", orientation=orientation)


def _recording_widget(path: str, orientation: str, limits: dict[str, int]):
    import autograd_widget as aw

    if path.endswith(".awwatch"):  # a watch (every rank's with {rank}): its timeline and graph
        return aw.explore(aw.load_watch(path), orientation=orientation)
    return aw.explore(aw.load_recording(path, **limits), orientation=orientation)


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def terminal_text(text: str) -> str:
    r"""`text` with every character a terminal would act on instead of show escaped as Python
    writes it in a string literal: controls, bidirectional and other format characters, line
    separators, lone surrogates (`_ESCAPED`); the rest unchanged.

    Example:
        >>> terminal_text("run\x1b[2J.awrec \u202eevil")
        'run\\x1b[2J.awrec \\u202eevil'
        >>> terminal_text("wrote café.html")
        'wrote café.html'
    """
    if text.isprintable():
        return text
    out = []
    for c in text:
        if unicodedata.category(c) in _ESCAPED:
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000
                       else f"\\U{n:08x}")  # fmt: skip
        else:
            out.append(c)
    return "".join(out)


def say(text: str, stream: TextIO | None = None) -> bool:
    r"""Write `text` and a newline to `stream` (default: stdout) so that it cannot fail on the
    text: escaped for the terminal (`terminal_text`), and every character the stream's encoding
    cannot hold written as a backslash escape. Returns False when the stream itself failed (a
    closed pipe): nothing is raised.

    Example:
        >>> import io
        >>> raw = io.BytesIO(); out = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
        >>> say("wrote café\x1b.html", out), raw.getvalue()
        (True, b'wrote caf\\xe9\\x1b.html\n')
    """
    stream = sys.stdout if stream is None else stream
    line = terminal_text(text) + "\n"
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line = line.encode(encoding, "backslashreplace").decode(encoding, "replace")
    except LookupError:  # an encoding Python does not know: plain ASCII is safe anywhere
        line = line.encode("ascii", "backslashreplace").decode("ascii")
    try:
        stream.write(line)
        stream.flush()
    except (OSError, ValueError, UnicodeError):
        return False
    return True


def _error(e: BaseException) -> int:
    """Print `error: ...` for `e` on one line (escaped, `say`) and return 2."""
    text = str(e) if isinstance(e, ValueError | OSError) else f"{type(e).__name__}: {e}"
    say(f"error: {text}", sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Run the command line with `argv` (default: the process's): write the page, say so on
    stdout and return 0; any problem is one `error: ...` line on stderr and 2.

    Example:
        >>> main(["no-such-file.awrec", "--html", "page.html"])  # error: no recording at ...
        2
    """
    parser = argparse.ArgumentParser(
        prog="python -m autograd_widget",
        description="Write a standalone, offline HTML page: the tour's graph ('demo') or a "
        "recording saved by aw.record(...).save(FILE), or a watch (.awwatch); '{rank}' in the "
        "name: every rank's file, in one page with a rank selector.",
    )
    parser.add_argument("source", metavar="demo|FILE.awrec|FILE.awwatch",
                        help="'demo' for the tour's graph, or a saved recording or watch "
                        "('run_{rank}.awwatch': every rank's file)")
    parser.add_argument("--html", required=True, metavar="PATH", help="where to write the page")
    parser.add_argument("--orientation", choices=("TB", "LR"), default="TB")
    parser.add_argument("--title", default=None,
                        help="the page's title (default: the model's name and node count)")
    parser.add_argument("--description", default=None,
                        help="a paragraph under the title (plain text)")
    for flag, what in (("--max-manifest-bytes", "the largest manifest read (default 16 MiB)"),
                       ("--max-tensor-bytes", "the most bytes of kept tensors (default 1 GiB)"),
                       ("--max-inflation", "how many times a member may inflate (default 200)")):
        parser.add_argument(flag, type=_limit, default=None, metavar="N",
                            help=f"{what}: raise it for a large recording you trust")
    args = parser.parse_args(argv)
    limits = {k: v for k, v in (("max_manifest_bytes", args.max_manifest_bytes),
                                ("max_tensor_bytes", args.max_tensor_bytes),
                                ("max_inflation", args.max_inflation)) if v is not None}
    try:
        if args.source == "demo":
            widget = _tour_widget(args.orientation)
        else:
            widget = _recording_widget(args.source, args.orientation, limits)
    except Exception as e:  # a file from anyone: one line, never a traceback
        return _error(e)
    description = args.description
    if description is None and args.source == "demo":
        description = _DEMO_DESCRIPTION
    try:
        path = widget.save_html(args.html, title=args.title, description=description)
    except Exception as e:
        return _error(e)
    finally:
        widget.close()
    if not say(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): open it in any browser"):
        _quiet_stdout()
    return 0


def _quiet_stdout() -> None:
    """stdout failed (a closed pipe): the page is written all the same, so no traceback at
    exit either (Python's own flush of a broken stdout would print one)."""
    try:
        import os

        sys.stdout = open(os.devnull, "w", encoding="utf-8")
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
