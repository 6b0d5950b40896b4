"""A watch file from anyone opens safely (issue 38): every count is checked against what the file
can hold before anything is allocated, JSON is capped by what the structure needs and read
strictly, numbers are range-checked, a damaged middle record is skipped up to the next whole one
(with a warning naming it) instead of dropping every later step, and whatever the reader accepts
makes a sub-recording that `aw.load_recording` accepts back. Every file is crafted here.

Memory is bounded with `tracemalloc` (what Python and numpy allocate while reading), not
wall-clock time: the refused cases must fail before their claimed sizes are allocated."""

from __future__ import annotations

import json
import re
import struct
import tracemalloc
import warnings
import zipfile
import zlib

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.records import Node, RegionEdge, TensorMeta
from autograd_widget.core.regions import Region, RegionInput, RegionOutput
from autograd_widget.engine.watch import awwatch
from tests.helpers.awrec_craft import pack
from tests.helpers.watchcraft import file_with, graph_dict, head, rec, stp, strc, watched_step

MIB = 1 << 20


def load_peak(path, **kw):
    """(result or the exception, peak MiB Python allocated while loading)."""
    tracemalloc.start()
    try:
        try:
            out = aw.load_watch(path, **kw) if kw else aw.load_watch(path)
        except Exception as e:
            out = e
        return out, tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


def write(tmp_path, data: bytes, name="h.awwatch"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ counts against the file
@pytest.mark.parametrize("n", [10**8, 10**12])
def test_a_huge_num_outputs_is_refused_before_it_is_allocated(tmp_path, n):
    g = graph_dict()
    g["nodes"][1]["num_outputs"] = n
    p = write(tmp_path, file_with(strc(g)))
    assert p.stat().st_size < 8000
    err, peak = load_peak(p)
    assert isinstance(err, ValueError), err
    assert re.search(r"graph\.nodes\[1\]\.num_outputs: \d+ output slots, more than a "
                     r"structure of this size declares", str(err)), err
    assert peak < 64, peak


def test_a_structure_over_the_limit_says_how_to_raise_it(tmp_path):
    g = graph_dict()
    g["model_name"] = "m" * (2 * MIB)  # a whole, well-formed record of 2 MiB
    doc, arrays = watched_step()
    p = write(tmp_path, file_with(strc(g), stp(doc, arrays)))
    with pytest.raises(ValueError, match=r"its structure record at byte \d+ holds \d+ bytes, "
                       r"more than max_structure_bytes=1048576 .* raise the limit: "
                       r"aw\.load_watch\(path, max_structure_bytes=\d+\)"):
        awwatch.read(p, max_structure_bytes=MIB)
    _, _, steps, warns = awwatch.read(p, max_structure_bytes=4 * MIB)
    assert [s.step for s in steps] == [0] and warns == []
    # the remedy the message names is the public one, for one file and for every rank's
    with pytest.raises(ValueError, match=r"max_structure_bytes=1048576"):
        aw.load_watch(p, max_structure_bytes=MIB)
    assert aw.load_watch(p, max_structure_bytes=4 * MIB).steps == [0]
    ranked = p.with_name("run_0.awwatch")
    p.rename(ranked)
    with pytest.raises(ValueError, match=r"max_structure_bytes=1048576"):
        aw.load_watch(str(ranked).replace("run_0", "run_{rank}"), max_structure_bytes=MIB)


def test_step_json_is_capped_by_what_its_structure_needs(tmp_path):
    doc, arrays = watched_step()
    big = {**doc, "warnings": ["w" * (2 * MIB)]}  # more than 1 MiB + 256 B per item of 9 items
    p = write(tmp_path, file_with(strc(), stp(big, arrays)))
    err, peak = load_peak(p)
    assert isinstance(err, ValueError) and re.search(
        r"claims \d+ bytes at byte \d+ \(the limit for a STEP record here is 1050400\)", str(err)
    ), err
    assert peak < 16, peak
    # the same record, sized within the cap, reads
    ok = {**doc, "warnings": ["w" * 1000]}
    assert aw.load_watch(write(tmp_path, file_with(strc(), stp(ok, arrays)))).steps == [0]


def test_a_record_claiming_a_gigabyte_is_refused_from_its_header(tmp_path):
    data = file_with(strc()) + b"STRC" + struct.pack("<Q", 900 * MIB) + b"{}" * 100
    err, peak = load_peak(write(tmp_path, data))
    assert isinstance(err, ValueError) and re.search(r"claims 943718400 bytes", str(err)), err
    assert peak < 16


# ------------------------------------------------------------------ numbers and strictness
@pytest.mark.parametrize("what, value", [
    ("loss", 10**400), ("scale", 10**400), ("loss", -(10**400)),
])
def test_huge_integers_are_value_errors_not_overflow_errors(tmp_path, what, value):
    plain = {"step": 0, "watched": False, "loss": 1.0, "scale": None, "nonfinite_params": [],
             "failure": None, what: value}  # fmt: skip
    with pytest.raises(ValueError, match=rf"step\.{what}: expected a number"):
        aw.load_watch(write(tmp_path, file_with(stp(plain))))


@pytest.mark.parametrize("text", [b"1e400", b"9" * 400])
def test_1e400_and_400_digits_in_integer_fields_are_value_errors(tmp_path, text):
    doc, arrays = watched_step()
    raw = json.dumps({**doc, "n_order": 12345}).encode().replace(b"12345", text)
    payload = struct.pack("<I", len(raw)) + raw + arrays
    with pytest.raises(ValueError, match=r"step\.n_order must be an int"):
        aw.load_watch(write(tmp_path, file_with(strc(), rec(b"STEP", payload))))


def test_step_numbers_are_range_checked_and_the_largest_explores(tmp_path):
    a, arrays = watched_step(0)
    b, _ = watched_step(2**31 - 1)
    with pytest.raises(ValueError, match=r"step\.step must be an int >= 1 and < 2147483647"):
        aw.load_watch(write(tmp_path, file_with(strc(), stp(a, arrays), stp(b, arrays))))
    b, _ = watched_step(2**31 - 2)
    ok = file_with(strc(), stp(a, arrays), stp(b, arrays))
    w = aw.load_watch(write(tmp_path, ok, "ok.awwatch"))
    assert w.steps == [0, 2**31 - 2]
    widget = aw.explore(w)
    widget.close()


@pytest.mark.parametrize("what", ["repeated node", "duplicate key", "count below -1",
                                  "count past int64", "nonfinite twice", "births twice",
                                  "meta rank negative", "meta rank huge int", "nan token"])
def test_what_a_recording_would_refuse_the_watch_refuses(tmp_path, what):
    doc, arrays = watched_step()
    step = stp(doc, arrays)
    hd = head()
    if what == "repeated node":
        step = stp(doc, np.array([0, 1, 1], "<i4").tobytes() + arrays[12:])
    elif what == "duplicate key":
        raw = json.dumps(doc).encode().replace(b'"step": 0', b'"step": 0, "step": 0')
        step = rec(b"STEP", struct.pack("<I", len(raw)) + raw + arrays)
    elif what == "count below -1":
        step = stp({**doc, "nonfinite": [[0, -2, 0]]}, arrays)
    elif what == "count past int64":
        step = stp({**doc, "nonfinite": [[0, 2**63, 0]]}, arrays)
    elif what == "nonfinite twice":
        step = stp({**doc, "nonfinite": [[0, 1, 0], [0, 2, 0]]}, arrays)
    elif what == "births twice":
        step = stp({**doc, "births": [[1, "a", False], [1, "b", True]]}, arrays)
    elif what == "meta rank negative":
        hd = head(meta={"rank": -1})
    elif what == "meta rank huge int":
        hd = head(meta={"rank": 10**30})
    elif what == "nan token":
        raw = json.dumps({**doc, "loss": 12345}).encode().replace(b"12345", b"NaN")
        step = rec(b"STEP", struct.pack("<I", len(raw)) + raw + arrays)
    p = write(tmp_path, awwatch.MAGIC + hd + strc() + step)
    with pytest.raises(ValueError, match="not a readable autograd_widget watch"):
        aw.load_watch(p)


def test_a_sub_recording_of_anything_the_reader_accepts_saves_and_loads(tmp_path):
    """The edges of what the reader accepts (a NaN loss, -1 counts, the largest counts and
    step, a failure, births) make recordings `load_recording` accepts, unchanged."""
    doc, arrays = watched_step()
    nan = np.array([np.nan], "<f4").tobytes()
    steps = [
        stp({**doc, "loss": "nan", "scale": "inf", "nonfinite": [[0, -1, 0], [1, 0, 2**63 - 1]],
             "slot_nonfinite": [[0, 0, -1]], "births": [[1, "a cause", False]],
             "nonfinite_params": ["x"], "failure": ["RuntimeError", "boom", 2],
             "warnings": ["a warning"]},
            arrays[:12] + nan + arrays[16:]),
        stp({**doc, "step": 2**31 - 2, "loss": "-inf"}, arrays),
    ]
    p = write(tmp_path, awwatch.MAGIC + head(meta={"rank": 3, "world_size": 4, "torch": "x"})
              + strc() + b"".join(steps))
    w = aw.load_watch(p)
    for k in w.steps:
        r = w.recording(k)
        back = aw.load_recording(r.save(tmp_path / f"r{k}.awrec"))
        assert back.order == r.order and back.meta["watch_step"] == k
        assert json.dumps(back.to_manifest()["all_runs"]) == json.dumps(
            r.to_manifest()["all_runs"])
        assert back.failure == r.failure and back.births == r.births
    assert np.isnan(aw.load_recording(tmp_path / "r0.awrec").meta["loss"])


def test_a_real_watch_with_a_nonfinite_gradient_saves_a_loadable_recording(tmp_path):
    w = torch.tensor([0.0, 4.0], requires_grad=True)
    with aw.watch(params={"w": w}) as watch:
        for loss in (w.sqrt().sum(), (w * float("nan")).sum()):
            with watch.step(loss):
                loss.backward()
            w.grad = None
    for k in (0, 1):
        r = watch.recording(k)
        back = aw.load_recording(r.save(tmp_path / f"r{k}.awrec"))
        assert [o.kind for o in back.nonfinite_origins()] == [
            o.kind for o in r.nonfinite_origins()]


# ------------------------------------------------------------------ compiled regions
def region_graph(**change):
    """A graph dict with one compiled region on node n1 (built by hand: no torch.compile)."""
    d = graph_dict()
    nid = "n1"
    op = Node(f"{nid}/0", "aten::mul.Tensor", "aten", -1,
              [TensorMeta((2,), "float32", "cpu")], None, None, ["  line"], None, 1)
    region = Region(nid, 1, [op], [RegionEdge(nid, 0, f"{nid}/0", 0)],
                    [RegionInput("tangents_1", "gradient", 0, 0,
                                 TensorMeta((2,), "float32", "cpu"), [f"{nid}/0"])],
                    [RegionOutput(0, f"{nid}/0", 0)], True, "", "module")
    rd = region.to_dict()
    for path, value in change.items():
        node = rd
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        node[int(last) if last.isdigit() else last] = value
    d["regions"] = [rd]
    return d


def dumps(doc) -> bytes:
    """JSON as a hostile file spells a number too large for a float: 1e400."""
    return json.dumps(doc).replace("Infinity", "1e400").encode()


def test_a_hand_made_region_round_trips():
    d = region_graph()
    g = aw.BackwardGraph.from_dict(d)
    assert g.regions["n1"].ops[0].traceback == ["  line"]
    assert g.to_dict()["regions"] == d["regions"]


BAD_REGIONS = {
    "index 1e400": ({"index": float("inf")}, r"regions\[0\]\.index: expected an int"),
    "index 400 digits": ({"index": 10**400}, r"regions\[0\]\.index: expected an int"),
    "edge slot 1e400": ({"edges__0__3": float("inf")}, r"regions\[0\]\.edges\[0\]\[3\]"),
    "op seq 400 digits": ({"ops__0__sequence_nr": 10**400},
                          r"regions\[0\]\.ops\[0\]\.sequence_nr: expected an int"),
    "deep traceback": ({"ops__0__traceback": [json.loads("[" * 900 + "]" * 900)]},
                       r"regions\[0\]\.ops\[0\]\.traceback\[0\]: expected a string"),
    "note a list": ({"note": ["x"]}, r"regions\[0\]\.note: expected a string"),
    "available a string": ({"available": "yes"}, r"regions\[0\]\.available: expected true"),
    "node a number": ({"node": 1}, r"regions\[0\]\.node: expected a string"),
    "input kind": ({"inputs__0__kind": "evil"}, r"regions\[0\]\.inputs\[0\]\.kind"),
    "input meta shape": ({"inputs__0__meta": [["2"], "float32", "cpu"]},
                         r"regions\[0\]\.inputs\[0\]\.meta\[0\]\[0\]: expected an int"),
    "input users": ({"inputs__0__users": [3]}, r"regions\[0\]\.inputs\[0\]\.users\[0\]"),
    "output slot": ({"outputs__0__slot": -1}, r"regions\[0\]\.outputs\[0\]\.slot"),
    "output src": ({"outputs__0__src": ["n1/0"]}, r"regions\[0\]\.outputs\[0\]\.src"),
    "edge to nowhere": ({"edges__0__2": "n1/7"}, r"regions\[0\]\.edges\[0\]\[2\]: 'n1/7' is "
                        "neither the region's node nor one of its ops"),
    "op twice": ({"ops__0__id": "n1"}, r"regions\[0\]\.ops\[0\]\.id: a second op 'n1'"),
}


@pytest.mark.parametrize("what", list(BAD_REGIONS))
def test_region_fields_are_type_checked_everywhere(tmp_path, what):
    change, message = BAD_REGIONS[what]
    d = region_graph(**change)
    with pytest.raises(ValueError, match=message):
        aw.BackwardGraph.from_dict(d)
    # in a watch's structure
    p = write(tmp_path, awwatch.MAGIC + head() + rec(b"STRC", dumps({"id": 0, "graph": d})))
    with pytest.raises(ValueError, match="not a readable autograd_widget watch.*" + message):
        aw.load_watch(p)
    # in a recording's manifest
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * 3).sum()
    with aw.record(loss, params={"x": x}) as r:
        loss.backward()
    path = r.save(tmp_path / "r.awrec")
    with zipfile.ZipFile(path) as z:
        doc = json.loads(z.read("manifest.json"))
    doc["recording"]["graph"]["regions"] = d["regions"]
    path.write_bytes(pack(dumps(doc), {}))
    with pytest.raises(ValueError, match="malformed recording manifest: graph." + message):
        aw.load_recording(path)


def test_a_deep_region_traceback_never_reaches_save(tmp_path):
    """The issue's 900-deep op traceback: refused at load, so no save or close recurses."""
    d = region_graph(ops__0__traceback=json.loads("[" * 900 + '"x"' + "]" * 900))
    p = write(tmp_path, awwatch.MAGIC + head() + rec(b"STRC", json.dumps(
        {"id": 0, "graph": d}).encode()))
    with pytest.raises(ValueError, match=r"traceback\[0\]: expected a string, got a list"):
        aw.load_watch(p)


# ------------------------------------------------------------------ a damaged middle record
def five_steps(tmp_path):
    doc, arrays = watched_step()
    records = [stp({**doc, "step": k, "loss": float(k)}, arrays) for k in range(5)]
    prefix = awwatch.MAGIC + head() + strc()
    return prefix, records


@pytest.mark.parametrize("bit", [0, 7, 20, 40, 62])
def test_a_flipped_bit_in_a_middle_length_skips_only_that_step(tmp_path, bit):
    prefix, records = five_steps(tmp_path)
    damaged = bytearray(records[2])
    (length,) = struct.unpack_from("<Q", damaged, 4)
    struct.pack_into("<Q", damaged, 4, length ^ (1 << bit))
    at = len(prefix) + len(records[0]) + len(records[1])
    p = write(tmp_path, prefix + records[0] + records[1] + bytes(damaged) + records[3]
              + records[4])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = aw.load_watch(p)
    assert w.steps == [0, 1, 3, 4] and w.losses().tolist() == [0.0, 1.0, 3.0, 4.0]
    (message,) = w.warnings
    assert f"the STEP record at byte {at} is damaged" in message
    assert f"reading went on at the next whole record (byte {at + len(records[2])})" in message
    assert "the steps between step 1 and step 3 are left out" in message
    assert "last record is incomplete" not in message
    assert [str(c.message) for c in caught] == [message]


def test_a_damaged_middle_payload_or_tag_is_skipped_too(tmp_path):
    prefix, records = five_steps(tmp_path)
    payload_hit = bytearray(records[1])
    payload_hit[30] ^= 0x10
    tag_hit = bytearray(records[3])
    tag_hit[1] ^= 0x01
    p = write(tmp_path, prefix + records[0] + bytes(payload_hit) + records[2] + bytes(tag_hit)
              + records[4])
    with pytest.warns(UserWarning, match="is damaged"):
        w = aw.load_watch(p)
    assert w.steps == [0, 2, 4]
    assert "checksum does not match" in w.warnings[0] and "is not a record's" in w.warnings[1]


def test_a_damaged_structure_is_an_error_naming_it(tmp_path):
    prefix, records = five_steps(tmp_path)
    data = bytearray(prefix + b"".join(records))
    s = len(awwatch.MAGIC + head())
    data[s + 40] ^= 0x08  # inside the structure's JSON
    with pytest.raises(ValueError, match=(
            rf"step\.structure must be an int >= 0 and < 0.*after the damaged record at byte {s}")):
        aw.load_watch(write(tmp_path, bytes(data)))


def test_the_last_record_cut_is_still_incomplete_not_damaged(tmp_path):
    prefix, records = five_steps(tmp_path)
    p = write(tmp_path, prefix + b"".join(records)[:-9])
    w = aw.load_watch(p)
    assert w.steps == [0, 1, 2, 3] and len(w.warnings) == 1
    assert "the last record is incomplete" in w.warnings[0]


def test_a_file_of_fake_tags_costs_linear_work(tmp_path):
    """After a damaged record, the search for the next whole one checksums at most a multiple
    of the file (plus 64 MiB): 20,000 fake headers each claiming 300 KB (6 GB to checksum one
    by one) are refused after a few hundred."""
    prefix, records = five_steps(tmp_path)
    fake = b"STEP" + struct.pack("<Q", 300_000) + b"\0" * 4
    bad = bytearray(records[1])
    struct.pack_into("<Q", bad, 4, 1 << 40)
    p = write(tmp_path, prefix + records[0] + bytes(bad) + fake * 20_000 + records[2])
    calls = 0
    real = zlib.crc32

    def counting(*a):
        nonlocal calls
        calls += 1
        return real(*a)

    awwatch.zlib.crc32 = counting
    try:
        with pytest.raises(ValueError, match=r"the record at byte \d+ is damaged and no whole "
                           r"record was found after it within the search's budget"):
            aw.load_watch(p)
    finally:
        awwatch.zlib.crc32 = real
    assert 100 < calls < 1000
