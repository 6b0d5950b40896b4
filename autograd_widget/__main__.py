"""The standalone page without Jupyter.

- `python -m autograd_widget demo --html PATH`: the tour's graph (the headless counterpart of the
  tour notebook: it builds the tour's MLP, captures its backward graph, records the whole
  step-through and writes one offline HTML page, no kernel needed);
- `python -m autograd_widget FILE.awrec --html PATH`: a saved recording of a real backward
  (`aw.record(...).save(FILE)`, e.g. one per rank of a distributed job), replayed in the engine's
  own order, the failing node drawn failed; it needs neither the model nor its graph. A file
  from anyone is safe to pass (`aw.load_recording`'s limits; `--max-manifest-bytes`,
  `--max-tensor-bytes` and `--max-inflation` raise them).

Every problem (a file that is not a readable recording, a limit, a path that cannot be written)
is one line, `error: ...`, and exit status 2; never a traceback. The page is written beside its
path and renamed: a failure leaves the previous page as it was.
"""

from __future__ import annotations

import argparse
import sys

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

    return aw.explore(aw.load_recording(path, **limits), orientation=orientation)


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _error(e: BaseException) -> int:
    """Print `error: ...` for `e` (stderr escapes what it cannot encode) and return 2."""
    text = str(e) if isinstance(e, ValueError | OSError) else f"{type(e).__name__}: {e}"
    print(f"error: {text}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograd_widget",
        description="Write a standalone, offline HTML page: the tour's graph ('demo') or a "
        "recording saved by aw.record(...).save(FILE).",
    )
    parser.add_argument("source", metavar="demo|FILE.awrec",
                        help="'demo' for the tour's graph, or a saved recording")
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
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB): open it in any browser")
    return 0


if __name__ == "__main__":
    sys.exit(main())
