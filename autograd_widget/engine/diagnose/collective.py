"""What crosses ranks: collective nodes, collective errors, and how local a NaN/Inf's birth is.

In a distributed program a rank can fail, or see a NaN/Inf, because of another rank:

- a backward node that communicates (tensor parallel's `RedistributeBackward`,
  `_FromTorchTensorBackward`, `_ToTorchTensorBackward`, the differentiable collectives of
  `torch.distributed.nn.functional` and the functional collectives) hands on what the peers sent:
  a NaN "born" there was born on a peer (`is_collective_node`);
- a rank whose peer died fails inside the collective it was waiting in, with the backend's
  message (gloo: "Connection closed by peer ... typically caused by a remote worker crashing";
  NCCL: "NCCL error", a communicator aborted, a watchdog timeout), not its own bug
  (`is_collective_error`);
- a NaN/Inf whose cause is "saved `self` has 6 NaNs: produced in the forward" may have come in
  with weights an earlier all-reduce poisoned, or activations a forward collective carried;
  one whose cause is an op's own rule ("the derivative of sqrt at 0 is infinite") was made
  here (`birth_evidence` ranks how sure the cause makes a rank the birthplace).

Guarantees: only names and message texts are read (pure functions, torch-free, never raise).
"""

from __future__ import annotations

import re

from .origins import Origin

__all__ = ["birth_evidence", "is_collective_error", "is_collective_node"]

#: Backward node types that communicate with the other ranks (their Function class + "Backward").
_COLLECTIVE_NODE = re.compile(
    r"(?:Nested)?Redistribute|_ToTorchTensor|_FromTorchTensor|_Broadcast|_Gather|_Scatter"
    r"|_Reduce|_Reduce_Scatter|_AllGather|_AllGatherBase|_AlltoAll|_AlltoAllSingle|_AllReduce"
    r"|AllGatherIntoTensor|ReduceScatterTensor|AllToAllSingle"
)
_COLLECTIVE_TEXT = re.compile(
    r"Connection closed by peer|Connection reset by peer|remote worker crash|gloo/transport"
    r"|Timed out waiting|ProcessGroupGloo|ProcessGroupNCCL|NCCL error|nccl\w*Error"
    r"|communicator was aborted|Watchdog caught collective|collective operation timeout",
    re.IGNORECASE,
)
_COLLECTIVE_TYPES = frozenset({"DistBackendError", "DistNetworkError", "DistStoreError"})
_FORWARD = "produced in the forward"
#: A saved value named by its source (causes.py's `nonfinite_saved`): group 1, the reason, if any.
_OUTPUT_OF = re.compile(r"\(the output of \S+'s forward(: [^)]+)?\)")


def is_collective_node(name: str) -> bool:
    """Whether a backward node of type `name` communicates with the other ranks.

    Example:
        >>> is_collective_node("RedistributeBackward"), is_collective_node("_AllReduceBackward")
        (True, True)
        >>> is_collective_node("GatherBackward0"), is_collective_node("MmBackward0")
        (False, False)
    """
    if not isinstance(name, str):
        return False
    base = re.sub(r"Backward\d*$", "", name)
    return bool(_COLLECTIVE_NODE.fullmatch(base)) or "c10d_functional" in name


def is_collective_error(error: str, error_type: str = "") -> bool:
    """Whether an error is a collective's, failing because a peer rank stopped or never came
    (gloo's "Connection closed by peer", NCCL's errors, a collective's timeout).

    Example:
        >>> is_collective_error("[.../gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        ...                     "[127.0.0.1]:5071. This is typically caused by a remote worker")
        True
        >>> is_collective_error("boom", "DistBackendError"), is_collective_error("boom")
        (True, False)
    """
    if error_type in _COLLECTIVE_TYPES:
        return True
    return isinstance(error, str) and bool(_COLLECTIVE_TEXT.search(error))


def birth_evidence(origin: Origin | None, node_name: str = "") -> int:
    """How surely `origin` says the NaN/Inf was born on this rank, from 0 to 3.

    3: born at a local op for a reason of its own (sqrt at 0, log of zeros, an overflow, ...);
    2: a saved value was already non-finite in the forward, and the forward op that made it is
    named with a reason ("(the output of LogBackward0's forward: log of 1 negative input)",
    "(sqrt of a negative input)"; older files: "by LogBackward0: log of ..."); 1: a saved value
    non-finite in the forward, no reason known (weights or activations a collective may have
    brought); 0: no origin (the step was not watched), not a birth, or a birth at a node that
    communicates (`node_name`: the origin node's type), i.e. received from a peer.

    Example:
        >>> sqrt = Origin("n1", "born", "saved `result` has 3 zeros: the derivative ...", 1)
        >>> fwd = Origin("n0", "born", "saved `self` has 6 NaNs: produced in the forward", 0)
        >>> birth_evidence(sqrt, "SqrtBackward0"), birth_evidence(fwd, "PowBackward0")
        (3, 1)
        >>> birth_evidence(sqrt, "RedistributeBackward"), birth_evidence(None)
        (0, 0)
    """
    if origin is None or origin.kind != "born" or is_collective_node(node_name):
        return 0
    cause = origin.cause or ""
    source = _OUTPUT_OF.search(cause)
    if source is not None:
        return 2 if source.group(1) else 1
    if _FORWARD not in cause:
        return 3
    tail = cause.split(_FORWARD, 1)[1]
    return 2 if ": " in tail or "(" in tail else 1
