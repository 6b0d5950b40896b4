"""Hand-made `.awwatch` records, built independently of the project's writer, for the tests of
the watch file's reader (tests/engine/watch/test_awwatch.py, test_hostile_watch.py): a record is
tag, u64 length, payload, crc32; a file is the magic, a HEAD record, then STRC/STEP records."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awwatch

__all__ = ["file_with", "graph_dict", "head", "rec", "save_v1", "step_payload", "stp", "strc",
           "watched_step"]


def rec(tag: bytes, payload: bytes) -> bytes:
    """A record built independently of the writer: tag, u64 length, payload, crc32."""
    return tag + struct.pack("<Q", len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))


def head(**over) -> bytes:
    doc = {"format": "autograd_widget.watch", "version": [1, 0], "every": 1, "meta": {}}
    doc.update(over)
    return rec(b"HEAD", json.dumps(doc).encode())


def step_payload(doc: dict, arrays: bytes = b"") -> bytes:
    text = json.dumps(doc).encode()
    return struct.pack("<I", len(text)) + text + arrays


def graph_dict():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    return aw.capture((x * 3).sum(), params={"x": x}).to_dict()


def watched_step(step=0, structure=0, **over):
    doc = {"step": step, "watched": True, "loss": 1.0, "scale": None, "nonfinite_params": [],
           "failure": None, "structure": structure, "n_order": 3, "nonfinite": [],
           "slot_nonfinite": [], "births": [], "warnings": []}  # fmt: skip
    doc.update(over)
    arrays = np.array([0, 1, 2], "<i4").tobytes() + np.ones(2 + 1 + 1, "<f4").tobytes()
    return doc, arrays


def file_with(*records: bytes) -> bytes:
    return awwatch.MAGIC + head() + b"".join(records)


def strc(graph=None, sid=0):
    return rec(b"STRC", json.dumps({"id": sid, "graph": graph or graph_dict()}).encode())


def stp(doc, arrays=b""):
    return rec(b"STEP", step_payload(doc, arrays))


def save_v1(w, path):
    """Watch `w` written in format 1.0 (every step's arrays in its record), as the watches of
    earlier releases are: a HEAD of version [1, 0], then the 1.0 record builders."""
    out = [awwatch.MAGIC, head(every=w.every, meta={})]
    written = 0
    for st in w.records:
        while st.structure is not None and written <= st.structure:
            out.append(awwatch.structure_record(written, w.structures[written]))
            written += 1
        out.append(awwatch.step_record(st))
    path.write_bytes(b"".join(out))
    return path
