"""util/compat.py's readers of torch.compile's private attributes (issue 32), one by one, on
torch 2.13, and each one's fallback with the attribute removed or replaced (monkeypatched): a
note saying why, never an exception."""

from __future__ import annotations

import copy

import pytest
import torch

from autograd_widget.util import compat


@pytest.fixture(scope="module")
def region():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Linear(6, 2))
    cm = torch.compile(m, backend="aot_eager", dynamic=False)
    x = torch.randn(3, 4)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)

    def node():
        loss = cm(x).sum()
        fn = loss.grad_fn.next_functions[0][0]
        assert fn.name() == compat.COMPILED_NODE_NAME
        return loss, fn

    yield node
    torch._dynamo.reset()


def test_compiled_backward_reads_the_module(region):
    _loss, fn = region()
    found = compat.compiled_backward(fn)
    assert isinstance(found.module, torch.fx.GraphModule)
    assert found.source == "module" and found.note == ""
    plain = torch.ones(2, requires_grad=True).exp().sum().grad_fn
    assert compat.compiled_backward(plain) == (None, "", f"{plain.name()} is not a compiled "
                                               "region (CompiledFunctionBackward)")  # fmt: skip


def test_compiled_backward_fallbacks(region, monkeypatch):
    _loss, fn = region()
    cls = fn._forward_cls
    module = cls._lazy_backward_info.bw_module
    monkeypatch.setattr(cls, "_lazy_backward_info", cls._lazy_backward_info)  # restored after
    cached = type("CachedAutogradLazyBackwardCompileInfo", (), {})
    cases = [
        (None, "kept no backward module"),
        (type("I", (), {"bw_module": "not a module"})(), "not an FX GraphModule"),
        (type("C", (cached,), {"bw_module_fn": staticmethod(lambda: 1 / 0)})(),
         "could not be rebuilt (ZeroDivisionError"),
    ]  # fmt: skip
    for info, note in cases:
        monkeypatch.setattr(cls, "_lazy_backward_info", info)
        found = compat.compiled_backward(fn)
        assert found.module is None and note in found.note
    monkeypatch.setattr(cls, "_lazy_backward_info", type("C", (cached,), {
        "bw_module_fn": staticmethod(lambda: copy.deepcopy(module))})())  # fmt: skip
    found = compat.compiled_backward(fn)
    assert isinstance(found.module, torch.fx.GraphModule) and found.source == "cache"
    monkeypatch.delattr(cls, "_lazy_backward_info")
    found = compat.compiled_backward(fn)
    assert found.module is None and "keeps no `_lazy_backward_info`" in found.note
    assert torch.__version__ in found.note


@pytest.mark.usefixtures("open_regions")  # 2.12.1 keeps the metadata elsewhere: opaque there
def test_layout_args_and_metas(region, monkeypatch):
    _loss, fn = region()
    module = compat.compiled_backward(fn).module
    layout = compat.compiled_backward_layout(fn)
    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    assert len(layout) == len(placeholders)
    assert [a.kind for a in layout].count("saved") == len(fn._raw_saved_tensors)
    grads = [a for a in layout if a.kind == "grad"]
    assert [a.index for a in grads] == list(range(len(fn._input_metadata)))
    assert all(ph.name.startswith("tangents") for ph, a in zip(placeholders, layout)
               if a.kind == "grad")  # fmt: skip
    g = torch.ones(3, 2)
    args = compat.compiled_backward_args(fn, [g])
    assert len(args) == len(layout)
    saved = fn.saved_tensors
    for a, v in zip(layout, args):
        if a.kind == "saved":
            assert v is saved[a.index] or torch.equal(v, saved[a.index])
        elif a.kind == "grad":
            assert torch.equal(v, g)
    with pytest.raises(ValueError, match="not a compiled region"):
        compat.compiled_backward_args(torch.ones(1, requires_grad=True).exp().grad_fn, [g])
    # metas: a module without any (a warm cache's) gets them by fake propagation, the saved
    # values looked at (torch >= 2.10) or, on an older torch, unpacked through the guard
    versions = [saved_data for saved_data in (True, False) if compat.SAVED_DATA or not saved_data]
    for saved_data in versions:
        monkeypatch.setattr(compat, "SAVED_DATA", saved_data)
        bare = copy.deepcopy(module)
        for n in bare.graph.nodes:
            n.meta = {}
        before = [t._version for t in fn.saved_tensors]
        assert compat.compiled_backward_metas(fn, bare, layout) == ""
        assert [t._version for t in fn.saved_tensors] == before
        for a, b in zip(bare.graph.nodes, module.graph.nodes):
            if b.op == "call_function" and isinstance(b.meta.get("val"), torch.Tensor):
                assert a.meta["val"].shape == b.meta["val"].shape
                assert a.meta["val"].dtype == b.meta["val"].dtype
    # an older torch where reading a saved value would first run an unpack hook: a note
    def refuse(fn, attr):
        raise compat.UnpackRefused("unpack", "my_hooks")

    monkeypatch.setattr(compat, "saved_value", refuse)
    for n in bare.graph.nodes:
        n.meta = {}
    note = compat.compiled_backward_metas(fn, bare, layout)
    assert "could not be worked out (UnpackRefused: reading it would first run unpack" in note
    monkeypatch.undo()
    assert compat.compiled_backward_metas(fn, module, layout) == ""  # has them: nothing done
    bare = copy.deepcopy(bare)
    for n in bare.graph.nodes:
        n.meta = {}
    wrong = [compat.BackwardArg("grad", 0)] * len(layout)  # every argument the gradient
    assert "could not be worked out" in compat.compiled_backward_metas(fn, bare, wrong)
    # the layout's fallback: a torch with none of the prologues compat knows
    def no_prologue(fn):
        raise AttributeError("no prologue")

    monkeypatch.setattr(compat, "_bw_prologue", no_prologue)
    note = compat.compiled_backward_layout(fn)
    assert isinstance(note, str) and "lays out the compiled backward's arguments" in note
    plain = torch.ones(1, requires_grad=True).exp().grad_fn
    assert "is not a compiled region" in compat.compiled_backward_layout(plain)


@pytest.mark.usefixtures("open_regions")
@pytest.mark.parametrize("torch_layout", ["2.6", "2.10", "2.12"])
def test_each_torchs_prologue_gives_the_same_layout_and_args(region, monkeypatch, torch_layout):
    """The prologues of torch 2.6, 2.10 and 2.12 (each seen in that torch's source and run in
    its compat venv), simulated on this torch by delegating to its own prologue: `_bw_prologue`
    calls each with its own signature, and the layout and the arguments are this torch's."""
    _loss, fn = region()
    cls = fn._forward_cls
    real = compat._bw_prologue(fn)  # this torch's, as (saved, symints, opaque, grads)
    layout, args = compat.compiled_backward_layout(fn), compat.compiled_backward_args(
        fn, [torch.ones(3, 2)])
    from torch._functorch._aot_autograd import runtime_wrappers

    calls = []
    monkeypatch.setattr(cls, "_bw_prologue_fn", None, raising=False)
    monkeypatch.setattr(cls, "_backward_prologue", None, raising=False)  # 2.6's, where it is
    if torch_layout == "2.6":
        def backward_prologue(ctx, *grads):  # reads only ctx.saved_tensors and ctx.symints
            calls.append(ctx)
            return real(ctx.saved_tensors, ctx.symints, [], list(grads))

        monkeypatch.setattr(cls, "_backward_prologue", staticmethod(backward_prologue),
                            raising=False)  # fmt: skip
    elif torch_layout == "2.10":
        def functional(saved, symints, metadata, subclass_metadata, *grads):
            assert metadata is cls.metadata
            calls.append(metadata)
            return real(saved, symints, [], list(grads))

        monkeypatch.setattr(runtime_wrappers, "_backward_prologue_functional", functional,
                            raising=False)  # fmt: skip
    else:
        unwrap = object()
        monkeypatch.setattr(cls, "_bw_prologue_unwrap_fn", unwrap, raising=False)

        def functional(ctx_saved_tensors, ctx_symints, ctx_opaque_objects, metadata,
                       maybe_subclass_metadata, *flat_args, codegen_unwrap_fn=None):
            assert metadata is cls.metadata and codegen_unwrap_fn is unwrap
            calls.append(metadata)
            return real(ctx_saved_tensors, ctx_symints, ctx_opaque_objects, list(flat_args))

        monkeypatch.setattr(runtime_wrappers, "_backward_prologue_functional", functional,
                            raising=False)  # fmt: skip
    assert compat.compiled_backward_layout(fn) == layout
    again = compat.compiled_backward_args(fn, [torch.ones(3, 2)])
    assert len(again) == len(args) and calls
    for a, b in zip(again, args):
        assert (torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b)


def test_donated_buffer_config(monkeypatch):
    from types import SimpleNamespace

    from torch._functorch import config

    assert compat.donated_buffer_config() is bool(config.donated_buffer)
    with config.patch(donated_buffer=False):  # not monkeypatch: its undo deletes a config entry
        assert compat.donated_buffer_config() is False
    # a torch without the setting (torch's config module itself refuses a delattr for good)
    monkeypatch.setattr(torch._functorch, "config", SimpleNamespace())
    assert compat.donated_buffer_config() is None
