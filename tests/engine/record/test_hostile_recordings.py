"""A recording from anyone opens safely (issue 29): every hostile `.awrec` file the issue lists,
generated here (no committed binaries), opened in a child process under a memory cap and a CPU
cap; per case the exact error, the peak memory and the CPU time are asserted.

Bounds, and why:
- CPU: at most `CPU_S` = 1 s per case (the issue's "more than a second of CPU before its
  error"). It is CPU time (`time.process_time`), not wall-clock: a loaded 2-core CI machine
  shares the cores but does not make a case do more work. Measured on the 2-core dev machine:
  every refused case under 0.01 s, the heaviest (expensive JSON within the limits) ~0.2 s.
- Memory: the peak resident memory above what was resident before the case (VmHWM) at most
  `MEM_FACTOR` x the file's size + `MEM_SLACK`. The factor is the issue's "small multiple of
  its own size"; the slack covers what any load costs whatever the file (allocator arenas,
  zipfile's buffers, a 1 MiB read chunk; measured: 0-3 MiB for the small cases). The one case
  that may cost more is a manifest within the limits that is JSON made to be expensive: Python
  objects cost up to ~25x their JSON text, and deflate lets 1 byte of file be up to
  `max_inflation` bytes of text; that case is bounded by its inflated size instead
  (`JSON_FACTOR` x the manifest's bytes), and the limits bound that size.
- The address space of the child is capped (RLIMIT_AS) at its size after the imports plus
  `AS_MARGIN`, and its CPU time (RLIMIT_CPU): a regression fails here instead of the machine.

The widget stays usable: every case that loads is explored (a step and an inspector reply through
the protocol); tests/wire/test_hostile_messages.py covers malformed messages.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.awrec_craft import (
    DEFLATED,
    Member,
    build_zip,
    deflate,
    deflate_repeated,
    good_parts,
    pack,
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc and named pipes: Linux"
)

ROOT = Path(__file__).parents[3]
MIB = 1 << 20
CPU_S = 1.0
MEM_FACTOR = 8
MEM_SLACK = 24 * MIB
JSON_FACTOR = 32
AS_MARGIN = 1536 * MIB


@dataclass
class Ctx:
    """What the builders start from: a good recording's manifest and tensor members."""

    doc: dict
    tensors: dict[str, bytes]
    tmp: Path

    def good(self) -> bytes:
        return pack(self.doc, self.tensors)

    def edit(self, change: Callable[[dict], Any], tensors: dict[str, bytes] | None = None
             ) -> bytes:
        """The good file with `change(manifest document)` applied."""
        doc = copy.deepcopy(self.doc)
        change(doc)
        return pack(doc, self.tensors if tensors is None else tensors)

    def text(self, change: Callable[[str], str]) -> bytes:
        """The good file with `change(manifest text)` applied (for what JSON cannot say)."""
        return pack(change(json.dumps(self.doc)), self.tensors)


@dataclass
class Case:
    name: str
    build: Callable[[Ctx], bytes | Path]
    #: the error's text (re.search); None: the file loads
    error: str | None
    kwargs: dict = field(default_factory=dict)
    then: str | None = None
    #: bound memory by the inflated manifest instead of the file (see the module docstring)
    json_heavy: bool = False


def rec(doc: dict) -> dict:
    return doc["recording"]


def graph(doc: dict) -> dict:
    return doc["recording"]["graph"]


def _set(path: list, value: Any) -> Callable[[dict], None]:
    def change(doc: dict) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


def _bomb(ctx: Ctx, mib: int, declared: int | None = None) -> bytes:
    head = b'{"format": "autograd_widget.recording", "version": [1, 0], "pad": "'
    payload, crc, size = deflate_repeated(b" " * MIB, mib, head, b'"}')
    m = Member("manifest.json", method=DEFLATED, payload=payload, crc=crc,
               file_size=size if declared is None else declared)
    return build_zip([m])


def _tensor_bomb(ctx: Ctx) -> bytes:
    """A tensor member of 64 MiB of zeros deflated to ~64 KB, declared honestly (an index
    entry of that shape)."""
    doc = copy.deepcopy(ctx.doc)
    n = 16 * MIB  # float32 elements
    doc["tensors"] = {"n0:0": {"file": "tensors/0.bin", "dtype": "float32", "shape": [n]}}
    payload, crc, size = deflate_repeated(bytes(MIB), 64)
    m = Member("tensors/0.bin", method=DEFLATED, payload=payload, crc=crc, file_size=size)
    return build_zip([Member("manifest.json", json.dumps(doc).encode(), DEFLATED), m])


def _lying_tensor(ctx: Ctx) -> bytes:
    """The issue's "decompresses 1 GB before its size is checked": a member declaring 1 GiB
    for an entry of 12 bytes (refused from the declaration, nothing inflated)."""
    members = [Member("manifest.json", json.dumps(ctx.doc).encode(), DEFLATED)]
    for name, data in ctx.tensors.items():
        if name == "tensors/0.bin":
            members.append(Member(name, method=DEFLATED, payload=deflate(bytes(1 << 16)),
                                  file_size=1 << 30))
        else:
            members.append(Member(name, data))
    return build_zip(members)


def _many_entries_one_member(ctx: Ctx) -> bytes:
    def change(doc: dict) -> None:
        spec = doc["tensors"]["n0:0"]
        doc["tensors"] = {f"n0:{i}": dict(spec) for i in range(1000)}

    return ctx.edit(change)


def _patched(ctx: Ctx, name: str, **declared: Any) -> bytes:
    """The good file with member `name`'s headers declaring `declared`."""
    members = [Member("manifest.json", json.dumps(ctx.doc).encode(), DEFLATED)]
    members += [Member(n, b) for n, b in ctx.tensors.items()]
    for m in members:
        if m.name == name:
            for k, v in declared.items():
                setattr(m, k, v)
    return build_zip(members)


def _duplicate_member(ctx: Ctx) -> bytes:
    members = [Member("manifest.json", json.dumps(ctx.doc).encode(), DEFLATED)]
    members += [Member(n, b) for n, b in ctx.tensors.items()]
    members.append(Member("tensors/0.bin", bytes(12)))
    return build_zip(members)


def _overlapping(ctx: Ctx) -> bytes:
    """Three entries whose central records all point at one 256 KiB stored member (the
    "overlapping files" zip bomb): 768 KiB declared from a file of ~256 KiB."""
    doc = copy.deepcopy(ctx.doc)
    n = 64 * 1024
    doc["tensors"] = {f"n{k}:0": {"file": f"tensors/{k}.bin", "dtype": "float32", "shape": [n]}
                      for k in range(3)}
    data = bytes(4 * n)
    members = [Member("manifest.json", json.dumps(doc).encode(), DEFLATED),
               Member("tensors/0.bin", data)]
    members += [Member(f"tensors/{k}.bin", data, offset_of="tensors/0.bin") for k in (1, 2)]
    return build_zip(members)


def _traversal(ctx: Ctx) -> bytes:
    doc = copy.deepcopy(ctx.doc)
    evil = "../../hostile_escape.bin"
    doc["tensors"]["n0:0"]["file"] = evil
    return pack(doc, ctx.tensors, extra=[Member(evil, bytes(12))])


def _member_flood(ctx: Ctx) -> bytes:
    """20,000 empty members nobody names (their central records cost memory to list)."""
    return pack(ctx.doc, ctx.tensors, extra=[Member(f"junk/{i}") for i in range(20_000)])


def _expensive_json(ctx: Ctx) -> bytes:
    """A manifest within the limits built to cost the most memory per byte ("[]," is a list
    object per 3 bytes), made just compressible enough to stay under max_inflation, and wrong
    at the end (a run names no node): the worst a file can do before its error."""
    doc = copy.deepcopy(ctx.doc)
    rec(doc)["all_runs"][-1][0] = "n99"
    text = json.dumps(doc)
    # ~6 MiB of "[]," with a digit of noise every 64 bytes (ratio ~100x < 200)
    import random

    rng = random.Random(0)
    blocks = ["[]," * 21 + str(rng.randrange(10)) + "," for _ in range(96 * 1024)]
    pad = "[" + "".join(blocks) + "[]]"
    return pack(text.replace('"recording": {', f'"pad": {pad}, "recording": {{', 1),
                ctx.tensors)


def _deep(n: int) -> Callable[[Ctx], bytes]:
    return lambda ctx: ctx.text(lambda t: t.replace('"recording": {', '"pad": ' + "[" * n
                                                    + "]" * n + ', "recording": {', 1))


def _deep_values(ctx: Ctx) -> bytes:
    deep = "[" * 900 + "1.0" + "]" * 900
    return ctx.text(lambda t: t.replace('"values": [1.0]', f'"values": [{deep}]', 1))


def _bool_tensor(ctx: Ctx) -> bytes:
    """A bool tensor (its recorded summary agrees) whose bytes are not 0 or 1."""
    def change(doc: dict) -> None:
        doc["tensors"]["n0:0"].update(dtype="bool", shape=[12])
        runs = rec(doc)["all_runs"]
        last = max(r[4] for r in runs)
        (run,) = [r for r in runs if r[0] == "n0" and r[4] == last]
        run[7][0].update(dtype="bool", shape=[12], numel=12, values=[True] * 12)

    return ctx.edit(change)


def _fifo(ctx: Ctx) -> Path:
    path = ctx.tmp / "pipe.awrec"
    os.mkfifo(path)
    return path


def _folder(ctx: Ctx) -> Path:
    path = ctx.tmp / "folder.awrec"
    path.mkdir()
    return path


def _num_outputs(ctx: Ctx) -> bytes:
    """The issue's CPU hang: a node's num_outputs of 10**12 (looped over by its formula)."""
    return ctx.edit(_set(["recording", "graph", "nodes", 1, "num_outputs"], 10**12))


def _run_field(k: int, value: Any) -> Callable[[dict], None]:
    return _set(["recording", "all_runs", 0, k], value)


_NODE = ["recording", "graph", "nodes"]
_EDGES = ["recording", "graph", "edges"]

CASES = [
    # --------------------------------------------------------------- not a recording at all
    Case("text", lambda c: b"not a zip archive at all", r"not a zip archive"),
    Case("empty", lambda c: b"", r"not a zip archive"),
    Case("truncated", lambda c: c.good()[: len(c.good()) // 2], r"not a zip archive"),
    Case("no-manifest", lambda c: build_zip([Member("other.txt", b"x")]),
         r"has no manifest\.json"),
    Case("other-format", lambda c: c.edit(_set(["format"], "something.else")),
         r"its format is 'something\.else', not 'autograd_widget\.recording'"),
    Case("newer-major", lambda c: c.edit(_set(["version"], [2, 0])),
         r"written in recording format 2\.0, newer than this autograd_widget reads \(1\.x\): "
         r"upgrade"),
    Case("version-bool", lambda c: c.edit(_set(["version"], [True, 0])),
         r"its version is not \[major, minor\] \(got a list\)"),
    Case("dev-zero", lambda c: Path("/dev/zero"),
         r"^/dev/zero is a character device, not a recording: pass the path of an \.awrec"),
    Case("named-pipe", _fifo, r"pipe\.awrec is a named pipe, not a recording"),
    Case("folder", _folder, r"folder\.awrec is a folder, not a recording"),
    # --------------------------------------------------------------- unbounded reads
    Case("manifest-bomb-400MB", lambda c: _bomb(c, 400),
         r"its manifest\.json holds 419430469 bytes, more than max_manifest_bytes=16777216; "
         r"if you trust this file, raise the limit: aw\.load_recording\(path, "
         r"max_manifest_bytes=419430469\)"),
    Case("manifest-declares-4GB", lambda c: _bomb(c, 4, declared=4_000_000_000),
         r"holds 4000000000 bytes, more than max_manifest_bytes=16777216"),
    Case("manifest-inflates-1000x", lambda c: _bomb(c, 12),
         r"member 'manifest\.json' inflates 10\d\dx \(\d+ -> 12582981 bytes\), more than "
         r"max_inflation=200 \(a zip bomb\?\); .*max_inflation=10\d\d\)"),
    Case("manifest-size-lies", lambda c: _bomb(c, 400, declared=1000),
         r"the archive is corrupt \(BadZipFile: Bad CRC-32 for file 'manifest\.json'\)"),
    Case("tensor-declares-1GiB", _lying_tensor,
         r"tensors/0\.bin holds 1073741824 bytes, not 12 \(float32 of shape \[3\]\)"),
    Case("tensor-bomb-1000x", _tensor_bomb,
         r"member 'tensors/0\.bin' inflates 10\d\dx .*max_inflation"),
    Case("tensors-over-the-cap",
         lambda c: c.edit(_set(["tensors", "n0:0", "shape"], [2**28 + 1])),
         r"its tensors hold 1073741864 bytes, more than max_tensor_bytes=1073741824; "
         r".*max_tensor_bytes=1073741864\)"),
    Case("tensors-under-a-lowered-cap", lambda c: c.good(),
         r"its tensors hold 48 bytes, more than max_tensor_bytes=40",
         kwargs={"max_tensor_bytes": 40}),
    Case("one-member-many-entries", _many_entries_one_member,
         r"tensors\.n0:1\.file: 'tensors/0\.bin' is named by edge 'n0:0' too \(a member "
         r"holds one tensor\)"),
    Case("member-twice-in-the-archive", _duplicate_member,
         r"the archive holds two members named 'tensors/0\.bin'"),
    Case("overlapping-members", _overlapping,
         r"its members overlap: they declare \d+ compressed bytes, more than the file's \d+"),
    Case("member-flood", _member_flood, None, then="explore"),
    # --------------------------------------------------------------- a CPU hang
    Case("num-outputs-10**12", _num_outputs, None, then="formulas"),
    # --------------------------------------------------------------- zip headers
    Case("encrypted-manifest", lambda c: _patched(c, "manifest.json", flags=1),
         r"member 'manifest\.json' is encrypted"),
    Case("encrypted-tensor", lambda c: _patched(c, "tensors/1.bin", flags=1),
         r"member 'tensors/1\.bin' is encrypted"),
    Case("bzip2-member", lambda c: _patched(c, "manifest.json", method=12,
                                            payload=b"BZh91AY&SY"),
         r"member 'manifest\.json' uses compression method 12; \.awrec members are stored or "
         r"deflated"),
    Case("unknown-method", lambda c: _patched(c, "tensors/2.bin", method=99),
         r"member 'tensors/2\.bin' uses compression method 99"),
    Case("stored-size-lies", lambda c: _patched(c, "tensors/3.bin", compress_size=100),
         r"stored member 'tensors/3\.bin' declares 12 bytes but stores 100"),
    Case("compressed-size-past-the-end",
         lambda c: _patched(c, "tensors/3.bin", compress_size=1 << 30),
         r"member 'tensors/3\.bin' declares 1073741824 compressed bytes, more than the file's"),
    Case("bad-crc", lambda c: _patched(c, "tensors/1.bin", crc=1234),
         r"the archive is corrupt \(BadZipFile: Bad CRC-32 for file 'tensors/1\.bin'\)"),
    Case("path-traversal-name", _traversal,
         r"tensors\.n0:0\.file: '\.\./\.\./hostile_escape\.bin' is not a tensors/<i>\.bin "
         r"member"),
    # --------------------------------------------------------------- the tensor index
    Case("tensors-not-an-object", lambda c: c.edit(_set(["tensors"], [1, 2])),
         r"its tensor index is malformed: tensors: expected an object, got a list"),
    Case("dtype-a-list", lambda c: c.edit(_set(["tensors", "n0:0", "dtype"], ["float32"])),
         r"tensors\.n0:0\.dtype: expected a string, got a list"),
    Case("unknown-dtype", lambda c: c.edit(_set(["tensors", "n0:0", "dtype"], "float128")),
         r"tensors\.n0:0\.dtype: 'float128', which the format does not carry \(float16, "),
    Case("file-a-list", lambda c: c.edit(_set(["tensors", "n0:0", "file"], ["tensors/0.bin"])),
         r"tensors\.n0:0\.file: expected a string, got a list"),
    Case("shape-2**63", lambda c: c.edit(_set(["tensors", "n0:0", "shape"], [2**63, 0])),
         r"tensors\.n0:0\.shape\[0\]: expected an int in 0\.\.9223372036854775807, got "
         r"9223372036854775808"),
    Case("negative-dimension", lambda c: c.edit(_set(["tensors", "n0:0", "shape"], [-1, -3])),
         r"tensors\.n0:0\.shape\[0\]: expected an int in 0\.\.9223372036854775807, got -1"),
    Case("shape-a-string", lambda c: c.edit(_set(["tensors", "n0:0", "shape"], "3")),
         r"tensors\.n0:0\.shape: expected a list, got '3'"),
    Case("shape-a-float", lambda c: c.edit(_set(["tensors", "n0:0", "shape"], [3.9])),
         r"tensors\.n0:0\.shape\[0\]: expected an int in 0\.\.\d+, got 3\.9"),
    Case("bool-tensor-bytes", lambda c: c.edit(
        _set(["tensors", "n0:0"], {"file": "tensors/0.bin", "dtype": "bool", "shape": [12]})),
         r"malformed recording manifest: tensors\.n0:0: a bool tensor of shape \[12\], but the "
         r"gradient recorded on that edge is float32 of shape \[3\]"),
    Case("bool-tensor-not-0-or-1", _bool_tensor,
         r"tensors/0\.bin holds bool values other than 0 and 1"),
    Case("tensor-for-an-edge-not-in-the-graph", lambda c: c.edit(
        lambda d: d["tensors"].update({"n4:0": d["tensors"].pop("n0:0")})),
         r"malformed recording manifest: tensors\.n4:0: no edge 'n4:0' in the graph"),
    # --------------------------------------------------------------- JSON itself
    Case("deep-json-100k", _deep(100_000), r"its manifest is nested too deeply"),
    Case("deep-values-900", _deep_values,
         r"recording\.all_runs\[0\]\[6\]\[0\]\.values\[0\]: expected a list of 2 items, got 1|"
         r"all_runs\[0\]\[6\]\[0\]\.values\[0\]: expected a list of 2 items, got 1"),
    Case("nan-token", lambda c: c.text(lambda t: t.replace('"norm": 1.0', '"norm": NaN', 1)),
         r"its manifest is not strict JSON: NaN is not a JSON number"),
    Case("infinity-in-an-int-field",
         lambda c: c.text(lambda t: t.replace('"all_runs": [["n0", 0,', '"all_runs": [["n0", '
                                              'Infinity,', 1)),
         r"its manifest is not strict JSON: Infinity is not a JSON number"),
    Case("1e400-in-an-int-field", lambda c: c.text(
        lambda t: t.replace('"all_runs": [["n0", 0,', '"all_runs": [["n0", 1e400,', 1)),
         r"all_runs\[0\]\[1\]: expected an int in 0\.\.2\*\*64-1, got inf"),
    # Python 3.10 words it "Exceeds the limit (4300)", later ones "(4300 digits)"
    Case("int-of-5000-digits", lambda c: c.text(
        lambda t: t.replace('"all_runs": [["n0", 0,', '"all_runs": [["n0", ' + "9" * 5000 + ",",
                            1)),
         r"its manifest is not valid JSON \(Exceeds the limit \(4300( digits)?\)"),
    Case("duplicate-key", lambda c: c.text(lambda t: t.replace('"meta": {', '"meta": {"rank": 1, ',
                                                               1)),
         r"its manifest is not strict JSON: the key 'rank' appears twice in one object"),
    Case("not-utf8", lambda c: pack(b'{"format": "\xff\xfe\xfa"}', {}),
         r"its manifest is not valid JSON"),
    Case("expensive-json-within-the-limits", _expensive_json,
         r"all_runs\[9\]\[0\]: no node 'n99' in the graph", json_heavy=True),
    # --------------------------------------------------------------- the graph
    Case("name-null", lambda c: c.edit(_set([*_NODE, 1, "name"], None)),
         r"malformed recording manifest: graph\.nodes\[1\]\.name: expected a string, got null"),
    Case("name-a-list", lambda c: c.edit(_set([*_NODE, 1, "name"], ["Mul"])),
         r"graph\.nodes\[1\]\.name: expected a string, got a list"),
    Case("kind-unknown", lambda c: c.edit(_set([*_NODE, 1, "kind"], "leaf")),
         r"graph\.nodes\[1\]\.kind: expected one of 'function', 'accumulate_grad', "),
    Case("duplicate-node-ids", lambda c: c.edit(_set([*_NODE, 2, "id"], "n1")),
         r"graph\.nodes\[2\]\.id: a second node 'n1' \(node ids are unique\)"),
    Case("duplicate-edges", lambda c: c.edit(lambda d: graph(d)["edges"].append(["n1", 0,
                                                                                 "n2", 0])),
         r"graph\.edges\[4\]: a second edge 'n1:0' \(edge ids are unique\)"),
    Case("negative-input-slot", lambda c: c.edit(_set([*_EDGES, 1, 3], -1)),
         r"graph\.edges\[1\]\[3\]: expected an int in 0\.\.2\*\*64-1, got -1"),
    Case("input-slot-past-the-inputs", lambda c: c.edit(_set([*_EDGES, 1, 3], 5)),
         r"graph\.edges\[1\]\[3\]: input slot 5 of 'n2', which has 1 \(inputs\)"),
    Case("output-slot-past-num-outputs", lambda c: c.edit(_set([*_EDGES, 1, 1], 7)),
         r"graph\.edges\[1\]\[1\]: output slot 7 of 'n1', which has 2 \(num_outputs\)"),
    Case("unknown-node-in-an-edge", lambda c: c.edit(_set([*_EDGES, 1, 2], "n77")),
         r"graph\.edges\[1\]\[2\]: edge 'n1:0' \(to 'n77'\) names an unknown node 'n77'"),
    Case("unknown-root", lambda c: c.edit(_set(["recording", "graph", "roots", 0, 0], "n77")),
         r"graph\.roots\[0\]\[0\]: root 'n77' is not a node"),
    Case("cycle", lambda c: c.edit(lambda d: graph(d)["edges"].append(["n2", 0, "n1", 0]) or
                                   graph(d)["edges"].pop(3)),
         r"graph\.edges: they make a cycle through node 'n\d' \(a backward graph has none\)"),
    Case("shape-a-string-in-the-graph",
         lambda c: c.edit(_set([*_NODE, 1, "inputs", 0, 0], "3")),
         r"graph\.nodes\[1\]\.inputs\[0\]\[0\]: expected a list, got '3'"),
    # --------------------------------------------------------------- the runs
    Case("unknown-node-in-the-order", lambda c: c.edit(_run_field(0, "n99")),
         r"malformed recording manifest: all_runs\[0\]\[0\]: no node 'n99' in the graph"),
    Case("a-run-not-a-list", lambda c: c.edit(_set(["recording", "all_runs", 0], {"n": 1})),
         r"all_runs\[0\]: expected a list, got an object"),
    Case("node-runs-twice-in-a-pass", lambda c: c.edit(_run_field(0, "n1")),
         r"all_runs\[1\]\[0\]: 'n1' runs a second time in pass 0"),
    Case("step-out-of-order", lambda c: c.edit(_set(["recording", "all_runs", 1, 1], 5)),
         r"all_runs\[1\]\[1\]: step 5 where step 1 of pass 0 comes next"),
    Case("pass-before-it-began", lambda c: c.edit(_run_field(4, 7)),
         r"all_runs\[0\]\[4\]: pass 7 before pass 0 began"),
    Case("seconds-a-string", lambda c: c.edit(_run_field(5, "soon")),
         r"all_runs\[0\]\[5\]: expected a number, 'nan', 'inf' or '-inf', got 'soon'"),
    Case("more-summaries-than-slots", lambda c: c.edit(
        lambda d: rec(d)["all_runs"][0][6].extend([None] * 5)),
         r"all_runs\[0\]\[6\]: expected at most 1 items, got 6"),
    Case("values-too-many", lambda c: c.edit(
        lambda d: rec(d)["all_runs"][0][6][0].update(values=[1.0] * 65)),
         r"all_runs\[0\]\[6\]\[0\]\.values: expected at most 64 items, got 65"),
    Case("summary-missing-norm", lambda c: c.edit(
        lambda d: rec(d)["all_runs"][0][6][0].pop("norm")),
         r"all_runs\[0\]\[6\]\[0\]\.norm: missing"),
    Case("failure-names-no-node", lambda c: c.edit(_set(
        ["recording", "failure"], {"node": "n99", "inputs": [], "error": "boom"})),
         r"malformed recording manifest: failure\.node: no node 'n99' in the graph"),
    Case("failure-in-an-earlier-pass", lambda c: c.edit(_set(
        ["recording", "failure"], {"node": "n2", "inputs": [], "error": "boom",
                                   "pass_index": 0})),
         r"failure\.pass_index: pass 0, but the failing pass is the last one \(the runs reach "
         r"pass 1\)"),
    Case("explanation-culprit-no-node", lambda c: c.edit(_set(
        ["recording", "failure"], {"node": "n2", "inputs": [], "error": "boom", "pass_index": 1,
                                   "explanation": {"node": "n2", "kind": "inplace",
                                                   "sentence": "s", "culprit": "n42"}})),
         r"failure\.explanation\.culprit: no node 'n42' in the graph"),
    Case("births-names-no-node", lambda c: c.edit(_set(["recording", "births"],
                                                       {"n42": ["why", False]})),
         r"births\.n42: no node 'n42' in the graph"),
    Case("meta-rank-a-string", lambda c: c.edit(_set(["recording", "meta", "rank"], "zero")),
         r"meta\.rank: expected an int in 0\.\.2\*\*64-1, got 'zero'"),
    Case("meta-a-list", lambda c: c.edit(_set(["recording", "meta"], [1])),
         r"meta: expected an object, got a list"),
    Case("warnings-not-strings", lambda c: c.edit(_set(["recording", "warnings"], [{}])),
         r"warnings\[0\]: expected a string, got an object"),
    # --------------------------------------------------------------- what must still load
    Case("good", lambda c: c.good(), None, then="explore"),
    Case("good-minor-version-with-new-fields", lambda c: c.edit(
        lambda d: (d.update(version=[1, 9], extra={"new": [1]}),
                   graph(d)["nodes"][0].update(future_field=True),
                   rec(d).update(new_section=[]))), None, then="explore"),
]


def test_every_case_has_a_unique_name():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Build every case, open them all in one capped child process, return name -> (case,
    size in bytes, the inflated manifest's size, result)."""
    tmp = tmp_path_factory.mktemp("hostile")
    doc, tensors = good_parts()
    ctx = Ctx(doc, tensors, tmp)
    spec_cases, built = [], {}
    for i, case in enumerate(CASES):
        made = case.build(ctx)
        if isinstance(made, bytes):
            path = tmp / f"{i:02d}-{case.name}.awrec"
            path.write_bytes(made)
            size = len(made)
        else:
            path, size = made, 0
        built[case.name] = (case, size, _inflated(path))
        spec_cases.append({"name": case.name, "path": str(path), "kwargs": case.kwargs,
                           "then": case.then})
    spec = {"as_margin": AS_MARGIN, "cpu_cap": 120, "cases": spec_cases}
    (tmp / "spec.json").write_text(json.dumps(spec))
    out = subprocess.run(
        [sys.executable, "-m", "tests.helpers.hostile_child", str(tmp / "spec.json"),
         str(tmp / "results.json")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, f"the child died ({out.returncode}):\n{out.stderr[-3000:]}"
    results = {r["name"]: r for r in json.loads((tmp / "results.json").read_text())}
    assert not (tmp.parent.parent / "hostile_escape.bin").exists()
    assert not (tmp / "hostile_escape.bin").exists()
    return {name: (*built[name], results[name]) for name in built}


def _inflated(path: Path) -> int:
    """The declared size of the manifest of a zip file (0 when there is none)."""
    import zipfile

    try:
        if not path.is_file():
            return 0
        with zipfile.ZipFile(path) as z:
            return z.getinfo("manifest.json").file_size
    except (zipfile.BadZipFile, KeyError, OSError, ValueError):
        return 0


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_file(case: Case, measured):
    _, size, inflated, r = measured[case.name]
    report = (f"{case.name}: {size} bytes, peak +{r['peak'] / MIB:.1f} MiB, {r['cpu']:.3f} s "
              f"CPU, {r['type']}: {r['error']}")
    if case.error is None:
        assert r["error"] is None, report
    else:
        assert r["type"] == "ValueError", report
        assert re.search(case.error, r["error"]), report
    assert r["cpu"] <= CPU_S, report
    budget = MEM_SLACK + MEM_FACTOR * size
    if case.json_heavy:
        budget = MEM_SLACK + JSON_FACTOR * inflated
    assert r["peak"] <= budget, f"{report} (budget {budget / MIB:.1f} MiB)"
    print(report)


def test_a_huge_num_outputs_costs_one_line_per_edge_and_the_widget_works(tmp_path):
    """In process: the num_outputs of 10**12 node's formula lists its real slots (its edges and
    the formula's own outputs), and the recording explores, steps and inspects that node."""
    import autograd_widget as aw
    from autograd_widget.core.formulas.api import node_formula
    from autograd_widget.wire.protocol import dispatch

    doc, tensors = good_parts()
    path = tmp_path / "n.awrec"
    path.write_bytes(_num_outputs(Ctx(doc, tensors, tmp_path)))
    rec = aw.load_recording(path)
    assert rec.graph.nodes["n1"].num_outputs == 10**12
    nf = node_formula(rec.graph, "n1")
    assert nf.name == "MulBackward0" and len(nf.lines) == 2
    w = aw.explore(rec)
    session = w._session
    assert dispatch(session, {"type": "step"}) == []
    (reply,) = dispatch(session, {"type": "inspect", "request": 7, "id": "n1"})
    assert reply["type"] == "reply" and reply["request"] == 7
    assert dispatch(session, {"type": "step"}) == [] and w.stepper.position == 2
    w.close()
