"""Driving a widget as the front-end would, without a browser."""

from __future__ import annotations


def arr(buf, dtype):
    """A binary buffer of a widget payload as a numpy array."""
    import numpy as np

    return np.frombuffer(bytes(buf), dtype=dtype)


def send(w, msg):
    """Deliver a front-end message to a widget's handler; return what it sent back."""
    sent = []
    orig = w.send
    w.send = lambda content, buffers=None: sent.append(content)
    try:
        w._handle_message(w, msg, [])
    finally:
        w.send = orig
    return sent
