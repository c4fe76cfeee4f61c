"""numpy arrays and scalars (and torch tensors when torch is importable) as locals of a
blocked frame, for hangscan's --locals tests.

Usage: python py_arrays.py READY_FD VIEW_JSON

arrays_frame() holds the locals below and blocks on a lock nobody releases. Before that, the
program writes VIEW_JSON: [name, expected rendering] for each local, in order, built from what
numpy and torch print themselves (shape, dtype.name, str() of each element in C order, the
tensor's device), in hangscan's format; then "ready" to READY_FD.
"""
import json
import os
import sys
import threading

import numpy as np

try:
    import torch
except ImportError:
    torch = None

NEVER = threading.Lock()
NEVER.acquire()
ITEMS = 10   # elements shown before "... N more"


def shape_text(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def values_text(flat):
    shown = [str(x) for x in flat[:ITEMS]]
    more = ", ... %d more" % (len(flat) - ITEMS) if len(flat) > ITEMS else ""
    return "[" + ", ".join(shown) + more + "]"


def array_view(a):
    flat = list(np.ravel(a, order="C"))
    return "numpy.ndarray(shape=%s, dtype=%s, data=%s)" % (shape_text(a.shape), a.dtype.name,
                                                            values_text(flat))


def scalar_view(x):
    t = type(x)
    return "%s.%s(%s)" % (t.__module__, t.__name__, str(x))


def tensor_view(t):
    flat = [np.float32(v) if t.dtype == torch.float32 else v
            for v in t.detach().reshape(-1).tolist()]
    return "torch.Tensor(shape=%s, dtype=%s, device=%s, data=%s)" % (
        shape_text(tuple(t.shape)), str(t.dtype).replace("torch.", ""), t.device,
        values_text(flat))


def arrays_frame(ready_fd, view_path):
    grid = np.arange(6, dtype=np.float64).reshape(2, 3) / 4
    steps = np.array([-3, 7, 2 ** 40], dtype=np.int64)
    small = np.array([0.1, 1e20, -2.5], dtype=np.float32)
    flags = np.array([True, False, True])
    column = grid[:, 1]                          # a strided view
    transposed = np.arange(12, dtype=np.int32).reshape(3, 4).T
    long_one = np.arange(1000, dtype=np.uint16)
    zero_d = np.array(42, dtype=np.int8)
    empty = np.zeros((0, 5))
    words = np.array(["a", "bc"])                # no element values: shape and dtype only
    counter = np.int64(-17)
    ratio = np.float32(0.1)
    exact = np.float64(2.5)
    truth = np.bool_(True)
    byte = np.uint8(255)
    names = ["grid", "steps", "small", "flags", "column", "transposed", "long_one", "zero_d",
             "empty", "words", "counter", "ratio", "exact", "truth", "byte"]
    local = locals()
    view = []
    for n in names:
        v = local[n]
        if isinstance(v, np.ndarray):
            text = array_view(v)
            if v.dtype.kind in "USV":
                text = "numpy.ndarray(shape=%s, dtype=%s)" % (shape_text(v.shape), "str")
            view.append([n, text])
        else:
            view.append([n, scalar_view(v)])
    if torch is not None:
        weights = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8
        index = torch.tensor([5, -6, 7], dtype=torch.int64)
        sliced = weights[1:, ::2]                # storage offset and strides
        deep = torch.arange(12, dtype=torch.int16).reshape(1, 2, 1, 2, 1, 3)  # sizes out of line
        param = torch.nn.Parameter(torch.tensor([1.5, -2.0], dtype=torch.float64))
        flags_t = torch.tensor([True, False])
        view += [["weights", tensor_view(weights)], ["index", tensor_view(index)],
                 ["sliced", tensor_view(sliced)], ["deep", tensor_view(deep)],
                 ["param", tensor_view(param)], ["flags_t", tensor_view(flags_t)]]
    with open(view_path + ".tmp", "w") as fh:
        json.dump(view, fh)
    os.rename(view_path + ".tmp", view_path)
    os.write(ready_fd, b"ready\n")
    NEVER.acquire()  # MARK arrays_wait


if __name__ == "__main__":
    arrays_frame(int(sys.argv[1]), sys.argv[2])
