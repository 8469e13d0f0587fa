#!/usr/bin/env python3
"""seeds_tf.py: reference fixtures for tapeflow's variables, recorded from TensorFlow itself.

Runs the code cells of the five seed documents (shared/seeds/000..004: TensorFlow's
variable guides and notebooks) with TensorFlow 2 on the CPU and writes, as one JSON file,
tests/reference/fixtures/seeds_tf.json, one entry per cell under a stable key such as
"000.create_variable" or "002.assign_shape_mismatch". Each entry records what TensorFlow
gives for that cell:

  - values (flattened row-major lists; complex as [re, im]; float32 values as the exact
    double they widen to), dtype names, shapes, variable names ("Variable:0", "Mark:0",
    "conv1/weights:0"), trainable flags and device strings;
  - what the cell prints (`printed`), and for the 002 notebook the eager placement log
    ("Executing op X in device Y") as [op, device] pairs;
  - errors as {type, module, message} exactly as TensorFlow words them (shape mismatch on
    assign, "Could not satisfy device specification" with soft placement off, get_variable
    "already exists" / "does not exist", ...). Graph-mode (Session) errors carry Python
    stack traces with this machine's file paths; those parts are cut out (see
    `clean_message`) and the entry says so.

Cells written with TF1 APIs (seed 004: get_variable, variable_scope, collections,
initializers, Session) run under tf.compat.v1 in a fresh tf.Graph() each. The R seed
(003) is translated to Python cell by cell (R arrays are column-major; the entries say
how). Entries whose key does not match a seed cell one to one carry "probe": true: they
pin down behaviour the seeds describe in words without code (e.g. assign of a tensor of
another dtype, reading an uninitialized variable).

Everything is seeded (tf.random.set_seed / tf.compat.v1.set_random_seed / numpy), oneDNN
is off, and the run is CPU-only, so a rerun with the same TensorFlow version gives the
same file. Random initial values are still TensorFlow's own Philox stream: entries that
depend on it say so in "note" and also record what does not (shape, dtype, name, bounds).

Usage (from the repository root):  python3 tests/reference/seeds_tf.py [--out PATH]
Needs TensorFlow 2 (`pip install tensorflow-cpu`). CI never runs this script: the tests
read only the committed JSON.
"""
import argparse
import contextlib
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile

# Must be set before TensorFlow is imported: oneDNN off (no reordered float sums), no GPU
# even if one is present; INFO logs on only in the child that records the placement log
# (an INFO log), quiet otherwise.
PLACEMENT_CHILD = "--placement-log-child" in sys.argv
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0" if PLACEMENT_CHILD else "2"
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["TF_DETERMINISTIC_OPS"] = "1"
os.environ["PYTHONHASHSEED"] = "0"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

SEED = 1234
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OUT = os.path.join(REPO, "tests", "reference", "fixtures", "seeds_tf.json")

# Keys, in the order they are run. Each maps to (seed, cells, description, function).
CELLS = []


def cell(key, cells, desc, placement_log=False):
    """Register a seed cell. The function returns a dict of named results."""
    def wrap(fn):
        CELLS.append((key, cells, desc, placement_log, fn))
        return fn
    return wrap


# ---------------------------------------------------------------------------------------
# Recording helpers


def clean_message(msg):
    """TensorFlow's message without this machine's stack traces and file paths.

    Graph-mode errors append "Detected at node ... defined at (most recent call last):
    File ..." blocks and an "Original stack trace for ..." tail; both name files on this
    machine. The rest (the part TensorFlow's C++ runtime wrote) is kept verbatim.
    """
    msg = msg.split("\n\nOriginal stack trace for")[0]
    msg = re.sub(r"Detected at node '[^']*' defined at \(most recent call last\):\n"
                 r"(?:    File [^\n]*\n)*Node: '[^']*'\n", "", msg)
    msg = msg.replace(os.path.dirname(tf.__file__), "<tensorflow>")
    return msg


def err(e):
    """An exception as TensorFlow raised it."""
    raw = str(e)
    out = {"type": type(e).__name__, "module": type(e).__module__,
           "message": clean_message(raw)}
    if out["message"] != raw:
        out["message_cleaned"] = True
    if isinstance(e, tf.errors.OpError):
        out["error_code"] = int(e.error_code)
        if e.op is not None:
            out["op"] = e.op.name
    return out


def flat(arr):
    """Row-major flattened values, JSON-ready: complex as [re, im], floats exact."""
    a = np.asarray(arr)
    out = []
    for x in a.reshape(-1).tolist():
        if isinstance(x, complex):
            out.append([x.real, x.imag])
        elif isinstance(x, bytes):
            out.append(x.decode())
        else:
            out.append(x)
    return out


def shape_of(s):
    s = tf.TensorShape(s)
    if s.rank is None:
        return None
    return [d for d in s.as_list()]


def describe(x, sess=None, values=True):
    """A variable, tensor, array or plain value as JSON-ready data."""
    if isinstance(x, BaseException):
        return {"error": err(x)}
    if isinstance(x, tf.Variable):
        d = {"kind": "Variable", "class": type(x).__name__}
        d["name"] = x.name
        d["dtype"] = x.dtype.base_dtype.name
        if x.dtype != x.dtype.base_dtype:
            d["dtype_repr"] = repr(x.dtype)
        d["shape"] = shape_of(x.shape)
        d["trainable"] = x.trainable if isinstance(x.trainable, bool) else repr(x.trainable)
        d["device"] = x.device
        if tf.executing_eagerly():
            d["repr"] = repr(x)
            if values:
                d["values"] = flat(x.numpy())
        elif sess is not None and values:
            d["values"] = flat(sess.run(x))
        return d
    if isinstance(x, tf.Tensor):
        d = {"kind": "Tensor"}
        if tf.executing_eagerly() and hasattr(x, "numpy"):
            d["dtype"] = x.dtype.name
            d["shape"] = shape_of(x.shape)
            d["device"] = x.device
            d["repr"] = repr(x)
            if values:
                d["values"] = flat(x.numpy())
        else:
            d["name"] = x.name
            d["dtype"] = x.dtype.name
            d["shape"] = shape_of(x.shape)
            d["device"] = x.device
            if sess is not None and values:
                d["values"] = flat(sess.run(x))
        return d
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        a = np.asarray(x)
        return {"kind": "ndarray", "dtype": a.dtype.name, "shape": list(a.shape),
                "values": flat(a), "repr": repr(x)}
    if isinstance(x, tf.TensorShape):
        return {"kind": "TensorShape", "shape": shape_of(x), "repr": repr(x), "str": str(x)}
    if isinstance(x, tf.DType):
        return {"kind": "DType", "name": x.name, "repr": repr(x), "str": str(x)}
    if isinstance(x, dict):
        return {k: describe(v, sess, values) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [describe(v, sess, values) for v in x]
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    return {"kind": type(x).__name__, "repr": repr(x)}


@contextlib.contextmanager
def capture_fds():
    """Capture what the C++ runtime writes to fds 1 and 2 (the placement log)."""
    buf = {"text": ""}
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = (os.dup(1), os.dup(2))
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield buf
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            tmp.seek(0)
            buf["text"] = tmp.read().decode("utf-8", "replace")


PLACEMENT_RE = re.compile(r"Executing op (\S+) in device (\S+)")


def placement_logs(path):
    """Child process: run the cells marked placement_log with the log on from the start.

    TensorFlow only logs placement when set_log_device_placement(True) comes before the
    eager context's first op ("logging device placement must be turned on at the start of
    the session", seed 002); so these cells run again in a fresh process. (Turning the
    log on later logs nothing, and turning it off again after ops ran leaves eager soft
    placement off in TF 2.21 although get_soft_device_placement() says True.)
    """
    tf.debugging.set_log_device_placement(True)
    tf.config.experimental.enable_op_determinism()
    logs = {}
    for key, _cells, _desc, placement_log, fn in CELLS:
        if not placement_log:
            continue
        tf.random.set_seed(SEED)
        with capture_fds() as fdbuf, contextlib.redirect_stdout(io.StringIO()):
            result = fn()
        del result
        logs[key] = [list(m) for m in PLACEMENT_RE.findall(fdbuf["text"])]
    with open(path, "w") as f:
        json.dump(logs, f)


def run_placement_child():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "logs.json")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--placement-log-child",
                        path], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)


def run_cell(key, cells, desc, placement_log, fn, logs):
    tf.random.set_seed(SEED)
    np.random.seed(SEED)
    printed = io.StringIO()
    log = logs.get(key) if placement_log else None
    with contextlib.redirect_stdout(printed):
        result = fn()
    entry = {"seed": key.split(".")[0], "cells": cells, "description": desc}
    note = result.pop("note", None)
    probe = result.pop("probe", False)
    sess = result.pop("_sess", None)
    if probe:
        entry["probe"] = True
    graph = result.pop("_graph", None)
    with (graph.as_default() if graph is not None else contextlib.nullcontext()):
        entry["results"] = describe(result, sess)
    if printed.getvalue():
        entry["printed"] = printed.getvalue()
    if log is not None:
        entry["placement_log"] = log
    if note:
        entry["note"] = note
    if sess is not None:
        sess.close()
    return entry


def in_graph(fn):
    """Run fn(graph) in a fresh graph with a graph-level seed; returns its dict."""
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(SEED)
        out = fn(g)
    out["_graph"] = g
    return out


def names(coll):
    return [getattr(v, "name", repr(v)) for v in coll]


def collections(g):
    return {
        "global_variables": names(g.get_collection(v1.GraphKeys.GLOBAL_VARIABLES)),
        "trainable_variables": names(g.get_collection(v1.GraphKeys.TRAINABLE_VARIABLES)),
        "local_variables": names(g.get_collection(v1.GraphKeys.LOCAL_VARIABLES)),
    }


# ---------------------------------------------------------------------------------------
# Seed 000: a learner's notebook (TF2, eager)


@cell("000.create_variable", "In [2]",
      "tf.constant(5); Variables from an int list, a bool list and a complex list")
def _():
    tensor = tf.constant(5)
    variable = tf.Variable([[2, 3], [4, 5]])
    bool_variable = tf.Variable([False, True, False, True])
    complex_variable = tf.Variable([5 + 4j, 6 + 5j])
    return {"tensor": tensor, "variable": variable, "bool_variable": bool_variable,
            "complex_variable": complex_variable}


@cell("000.shape_dtype_numpy", "In [4]",
      "print of .shape, .dtype and the bound method .numpy (not called) of an int32 variable")
def _():
    variable = tf.Variable([[2, 3], [4, 5]])
    print("Shape:", variable.shape)
    print("Dtype:", variable.dtype)
    print("Converted in Numpy:", variable.numpy)
    return {"shape": variable.shape, "dtype": variable.dtype, "variable": variable}


@cell("000.as_tensor_argmax_reshape", "In [7]",
      "str of an int32 variable, convert_to_tensor, argmax (axis 0, int64), reshape to [1,4]")
def _():
    variable = tf.Variable([[2, 3], [4, 5]])
    t = tf.convert_to_tensor(variable)
    am = tf.argmax(variable)
    r = tf.reshape(variable, ([1, 4]))
    print("Variable:", variable)
    print("\n Viewed as a Tensor:", t)
    print("\n Index of Highest Value:", am)
    print("\n Copying and Reshaping:", r)
    return {"variable_after": variable, "as_tensor": t, "argmax": am, "reshaped": r}


@cell("000.assign_shape_mismatch", "In [9]",
      "int32 [2]: assign [4,5] works; assign of 3 values raises and leaves the value")
def _():
    a = tf.Variable([2, 3])
    a.assign([4, 5])
    error = None
    try:
        a.assign([1, 2, 7])
    except Exception as e:
        print(e)
        error = e
    print("Variable:", a)
    return {"error": error, "a": a,
            "note": "the seed's output ('Shapes (2,) and (3,) are incompatible') came from an "
                    "older TensorFlow; 'error' is what this version raises"}


@cell("000.copy_and_assign_ops", "In [10]",
      "b = Variable(a) copies; assign, assign_add, assign_sub on int32 return the new value")
def _():
    a = tf.Variable([4, 5])
    b = tf.Variable(a)
    a.assign([2, 3])
    print(a.numpy())
    print(b.numpy())
    add = a.assign_add([2, 3])
    add_now = add.numpy()
    print(add_now)
    sub = a.assign_sub([4, 6])
    print(sub.numpy())
    return {"a": a, "b": b, "assign_add_result": add_now, "assign_sub_result": sub.numpy(),
            "assign_add_returned_later": add,
            "note": "assign_add returns an 'UnreadVariable' that aliases the variable: read "
                    "after the assign_sub it shows the current value [0, 0] "
                    "(assign_add_returned_later), not the [4, 6] it printed"}


@cell("000.same_name_scalar", "In [11]",
      "two scalar int32 variables both named 'Aakash'; a == b elementwise")
def _():
    tensor = tf.constant(5)
    a = tf.Variable(tensor, name="Aakash")
    b = tf.Variable(tensor + 1, name="Aakash")
    eq = a == b
    print(eq)
    return {"a": a, "b": b, "a_eq_b": eq}


@cell("000.trainable_false", "In [12]", "Variable(1, trainable=False): a step counter")
def _():
    step_counter = tf.Variable(1, trainable=False)
    return {"step_counter": step_counter}


@cell("000.cpu_placement_matmul", "In [14]",
      "under tf.device('CPU:0'): float32 variable [2,3] matmul constant [3,2]")
def _():
    with tf.device('CPU:0'):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        c = tf.matmul(a, b)
    print(c)
    return {"a": a, "b": b, "c": c}


@cell("000.cross_device_mul", "In [15]",
      "variables made on CPU:0, multiplied (broadcast [2,3]*[1,3]) under tf.device('GPU:0') "
      "with no GPU and soft placement on (the default)")
def _():
    with tf.device('CPU:0'):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.Variable([[1.0, 2.0, 3.0]])
    with tf.device('GPU:0'):
        k = a * b
    print(k)
    return {"soft_device_placement": tf.config.get_soft_device_placement(),
            "a": a, "b": b, "k": k}


@cell("000.constant_repr", "In [17]", "repr of tf.constant([4,5,6])")
def _():
    x = tf.constant([4, 5, 6])
    return {"x": x}


@cell("000.named_scalar", "In [18]", "Variable(2.0, name='my_variable'): float32 scalar")
def _():
    x = tf.Variable(2.0, name="my_variable")
    return {"x": x}


@cell("000.assign_scalar", "In [20]",
      "float32 scalar assign(45.2): stored as the float32 nearest 45.2")
def _():
    x = tf.Variable(2.0, name="my_variable")
    x.assign(45.2)
    return {"x": x}


@cell("000.assign_add_unread", "In [22]",
      "the value returned by assign_add(4.0) prints as 'UnreadVariable'")
def _():
    x = tf.Variable(2.0, name="my_variable")
    x.assign(45.2)
    r = x.assign_add(4.0)
    return {"returned": r, "returned_repr": repr(r), "x": x}


@cell("000.assign_sub_int_scalar", "In [23]",
      "assign_sub(2) (a Python int) on a float32 variable converts it to float32")
def _():
    x = tf.Variable(2.0, name="my_variable")
    x.assign(45.2)
    x.assign_add(4.0)
    x.assign_sub(2)
    return {"x": x}


@cell("000.add", "In [24]", "tf.add(a, b) and a + b of two int32 variables give tensors")
def _():
    a = tf.Variable([1, 2, 3])
    b = tf.Variable([1, 1, 1])
    c = tf.add(a, b)
    d = a + b
    print("C:", c)
    print("D:", d)
    return {"c": c, "d": d}


@cell("000.multiply", "In [25]", "tf.multiply(a, b) and a * b of two int32 variables")
def _():
    a = tf.Variable([1, 2, 3])
    b = tf.Variable([1, 1, 1])
    c = tf.multiply(a, b)
    d = a * b
    print("C:", c)
    print("D:", d)
    return {"c": c, "d": d}


@cell("000.exp", "In [27]", "tf.math.exp of a float32 variable [3,4,5]")
def _():
    a = tf.Variable([3., 4., 5.])
    b = tf.math.exp(a)
    print("B:", b)
    return {"b": b}


@cell("000.add_python_lists", "In [29], In [30]", "tf.add of two Python int lists: int32")
def _():
    a_py = [1, 2]
    b_py = [3, 4]
    return {"sum": tf.add(a_py, b_py)}


@cell("000.add_numpy_int64", "In [31], In [32]",
      "tf.add of two NumPy default-int arrays: int64 (NumPy's dtype is kept)")
def _():
    a_np = np.array([1, 2, 3])
    b_np = np.array([2, 3, 4])
    return {"sum": tf.add(a_np, b_np)}


@cell("000.add_constants", "In [34], In [35]", "tf.add of two int32 constants")
def _():
    a_tf = tf.constant([1, 2])
    b_tf = tf.constant([2, 3])
    return {"sum": tf.add(a_tf, b_tf)}


@cell("000.tensor_numpy", "In [36]", "Tensor.numpy() gives an int32 ndarray")
def _():
    a_tf = tf.constant([1, 2])
    return {"numpy": a_tf.numpy()}


# ---------------------------------------------------------------------------------------
# Seed 002: the TF2 guide as an annotated notebook (placement log on)
# (Seed 001 is the same guide's prose without its code cells.)


@cell("002.create_variable", "In [1], In [2]",
      "with set_log_device_placement(True): float32 [2,2] from a tensor, bool, complex",
      placement_log=True)
def _():
    my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    my_variable = tf.Variable(my_tensor)
    bool_variable = tf.Variable([False, False, False, True])
    complex_variable = tf.Variable([5 + 4j, 6 + 1j])
    return {"my_tensor": my_tensor, "my_variable": my_variable,
            "bool_variable": bool_variable, "complex_variable": complex_variable,
            "note": "placement_log: the 'Executing op' lines of TensorFlow's eager placement "
                    "log, in order, recorded in a separate process that turned the log on "
                    "before its first op; ops run after the cell (DestroyResourceOp when "
                    "its variables are freed) are not included"}


@cell("002.tensor_repr", "In [5]", "repr of a float32 [2,2] constant")
def _():
    my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    return {"my_tensor": my_tensor}


@cell("002.variable_repr", "In [6]", "repr of a float32 [2,2] variable (reads it)",
      placement_log=True)
def _():
    my_variable = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    text = repr(my_variable)
    return {"repr": text, "my_variable": my_variable,
            "note": "placement_log includes the variable's creation, then the read by repr"}


@cell("002.create_from_tensor", "In [7]", "second variable from a fresh constant",
      placement_log=True)
def _():
    pra_my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    pra_my_variable = tf.Variable(pra_my_tensor)
    return {"pra_my_variable": pra_my_variable}


@cell("002.shape_dtype_numpy", "In [8]", "print of .shape, .dtype, .numpy() of float32 [2,2]")
def _():
    my_variable = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    print("Shape: ", my_variable.shape)
    print("DType: ", my_variable.dtype)
    print("As NumPy: ", my_variable.numpy())
    return {"shape": my_variable.shape, "dtype": my_variable.dtype,
            "numpy": my_variable.numpy()}


@cell("002.as_tensor_argmax_reshape", "In [11]",
      "str of a float32 variable, convert_to_tensor, argmax of the tensor, reshape [1,4]",
      placement_log=True)
def _():
    my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    my_variable = tf.Variable(my_tensor)
    print("A variable:", my_variable)
    as_tensor = tf.convert_to_tensor(my_variable)
    print("\nViewed as a tensor:", as_tensor)
    argmax = tf.argmax(my_tensor)
    print("\nIndex of highest value:", argmax)
    # this creates a new tensor; it does not reshape the variable.
    reshaped = tf.reshape(my_variable, [1, 4])
    print("\nCopying and reshpaing: ", reshaped)
    return {"as_tensor": as_tensor, "argmax": argmax, "reshaped": reshaped,
            "variable_after": my_variable}


@cell("002.positional_second_arg", "In [13]",
      "tf.Variable([1, 1], [2, 3]): the second positional argument is `trainable`, so the "
      "variable is [1, 1] and trainable holds the list [2, 3] unchanged")
def _():
    temp_var = tf.Variable([1, 1], [2, 3])
    return {"temp_var": temp_var, "trainable_repr": repr(temp_var.trainable),
            "trainable_type": type(temp_var.trainable).__name__,
            "note": "TensorFlow does not validate `trainable`; the variable is still "
                    "trainable in practice (a non-empty list is truthy)"}


@cell("002.nested_list", "In [17]", "tf.Variable([[1, 1], [2, 3]]): int32 [2,2]")
def _():
    temp_var = tf.Variable([[1, 1], [2, 3]])
    return {"temp_var": temp_var}


@cell("002.constant_from_variable", "In [22]", "tf.constant(variable) reads it into a tensor",
      placement_log=True)
def _():
    temp_var = tf.Variable([[1, 1], [2, 3]])
    return {"constant": tf.constant(temp_var)}


@cell("002.convert_to_tensor", "In [23]", "tf.convert_to_tensor(variable)",
      placement_log=True)
def _():
    temp_var = tf.Variable([[1, 1], [2, 3]])
    return {"converted": tf.convert_to_tensor(temp_var)}


@cell("002.constant_eq_convert", "In [25]",
      "tf.constant(v) == tf.convert_to_tensor(v): elementwise bool [2,2]")
def _():
    temp_var = tf.Variable([[1, 1], [2, 3]])
    return {"eq": tf.constant(temp_var) == tf.convert_to_tensor(temp_var)}


@cell("002.constant_is_convert", "In [27]",
      "tf.constant(v) is tf.convert_to_tensor(v): False (two distinct tensors)")
def _():
    temp_var = tf.Variable([[1, 1], [2, 3]])
    return {"is": tf.constant(temp_var) is tf.convert_to_tensor(temp_var)}


@cell("002.assign_shape_mismatch", "In [28]",
      "float32 [2]: assign([1, 2]) converts ints; assign of 3 values raises ValueError",
      placement_log=True)
def _():
    a = tf.Variable([2.0, 3.0])
    a.assign([1, 2])
    error = None
    try:
        a.assign([1.0, 2.0, 3.0])
    except Exception as e:
        print(f"{type(e).__name__}: {e}")
        error = e
    return {"error": error, "a": a,
            "note": "the variable's name appears as ' Variable:0' (leading space) in the "
                    "message: TensorFlow's own formatting"}


@cell("002.value_after_failed_assign", "In [30]",
      "after the failed assign the variable still holds [1., 2.]")
def _():
    a = tf.Variable([2.0, 3.0])
    a.assign([1, 2])
    try:
        a.assign([1.0, 2.0, 3.0])
    except Exception:
        pass
    return {"a": a}


@cell("002.tensor_has_no_assign", "In [31], In [34]",
      "a tf.constant has no .assign: AttributeError")
def _():
    aa = tf.constant([1.0, 2.0])
    error = None
    try:
        aa.assign([2.0, 1.0])
    except Exception as e:
        print(f"{type(e).__name__}: {e}")
        print()
        print(type(e))
        print()
        print(e)
        error = e
    return {"error": error}


@cell("002.copy_and_assign_ops", "In [36]",
      "float32: b = Variable(a) copies; assign([5,6]); assign_add([2,3]); assign_sub([7,9])",
      placement_log=True)
def _():
    a = tf.Variable([2.0, 3.0])
    b = tf.Variable(a)
    a.assign([5, 6])
    print(a.numpy())
    print(b.numpy())
    add = a.assign_add([2, 3]).numpy()
    print(add)
    sub = a.assign_sub([7, 9]).numpy()
    print(sub)
    return {"a": a, "b": b, "assign_add_result": add, "assign_sub_result": sub}


@cell("002.same_name", "In [37]",
      "two float32 [2,2] variables both named 'Mark' (second is my_tensor + 1); a == b",
      placement_log=True)
def _():
    my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    a = tf.Variable(my_tensor, name='Mark')
    b = tf.Variable(my_tensor + 1, name='Mark')
    eq = a == b
    print(eq)
    return {"a": a, "b": b, "a_eq_b": eq}


@cell("002.trainable_false", "In [38], In [39]",
      "step_counter = Variable(1, trainable=False): int32 scalar 'Variable:0'")
def _():
    step_counter = tf.Variable(1, trainable=False)
    return {"step_counter": step_counter}


@cell("002.cpu_placement_matmul", "In [40]",
      "under tf.device('CPU:0'): variable [2,3] matmul constant [3,2]", placement_log=True)
def _():
    with tf.device('CPU:0'):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        c = tf.matmul(a, b)
    print(c)
    return {"a": a, "c": c}


@cell("002.gpu_hard_placement_error", "In [44]",
      "with soft placement off and no GPU, creating a variable under tf.device('GPU:0') "
      "raises InvalidArgumentError 'Could not satisfy device specification ...'")
def _():
    default_soft = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    error = None
    try:
        try:
            with tf.device('GPU:0'):
                a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
                b = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
                c = tf.matmul(a, b)
            print(c)
        except Exception as e:
            print(f"{type(e).__name__}: {e}")
            error = e
        # Which op fails first: a constant alone under GPU:0?
        const_error = None
        try:
            with tf.device('GPU:0'):
                tf.constant([1.0, 2.0])
        except Exception as e:
            const_error = e
    finally:
        tf.config.set_soft_device_placement(True)
    with tf.device('GPU:0'):
        soft_var = tf.Variable([1.0, 2.0])
    return {"default_soft_device_placement": default_soft, "error": error,
            "constant_error": const_error, "variable_under_gpu0_soft": soft_var,
            "devices": [d.name for d in tf.config.list_logical_devices()],
            "note": "soft placement is ON by default in this version (default_soft_device_"
                    "placement); the seed had to turn it off to see this error. 'error' is "
                    "the seed cell; 'constant_error' (probe) is a lone tf.constant under "
                    "GPU:0; 'variable_under_gpu0_soft' (probe) is a variable made under GPU:0 "
                    "once soft placement is back on: it lands on CPU:0"}


@cell("002.cross_device_mul_soft", "In [48], In [49]",
      "set_soft_device_placement(True); variables on CPU:0, a * b under GPU:0 runs on CPU",
      placement_log=True)
def _():
    tf.config.set_soft_device_placement(True)
    with tf.device('CPU:0'):
        a = tf.Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        b = tf.Variable([[1.0, 2.0, 3.0]])
    with tf.device('GPU:0'):
        k = a * b
    print(k)
    return {"a": a, "b": b, "k": k}


# ---------------------------------------------------------------------------------------
# Seed 003: the guide for R, translated. R arrays are column-major: array(1:6, c(2, 3))
# is [[1, 3, 5], [2, 4, 6]]; a plain R vector c(2, 3) reaches Python as a list of doubles,
# so tf$Variable(c(2, 3)) is float32 like tf.Variable([2.0, 3.0]).


def r_array(values, dims, dtype=np.int32):
    """R's array(values, dims): fill column-major."""
    return np.array(values, dtype=dtype).reshape(dims, order="F")


@cell("003.create_variable", "my_tensor, my_variable, bool_variable, complex_variable",
      "as_tensor(1:4, 'float32', shape = c(2, 2)) (row-major reshape), a bool and a "
      "complex128 variable")
def _():
    my_tensor = tf.reshape(tf.constant(np.arange(1, 5, dtype=np.int32), dtype=tf.float32),
                           [2, 2])
    my_variable = tf.Variable(my_tensor)
    bool_variable = tf.Variable([False, False, False, True])
    complex_variable = tf.Variable([5 + 4j, 6 + 1j])
    return {"my_variable": my_variable, "bool_variable": bool_variable,
            "complex_variable": complex_variable}


@cell("003.shape_dtype", "my_variable$shape, my_variable$dtype, as.array(my_variable)",
      "TensorShape([2, 2]) and tf.float32 reprs; the R array prints column-major (1 3 2 4)")
def _():
    my_variable = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    arr = my_variable.numpy()
    return {"shape": my_variable.shape, "dtype": my_variable.dtype,
            "values_row_major": flat(arr),
            "values_column_major": flat(arr.reshape(-1, order="F")),
            "note": "R's str(as.array(v)) lists values column-major: 'num [1:2, 1:2] 1 3 2 4'"}


@cell("003.as_tensor_argmax_reshape", "as_tensor, tf$math$argmax, tf$reshape",
      "same as 002.as_tensor_argmax_reshape, argmax taken of the variable")
def _():
    my_variable = tf.Variable(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    return {"as_tensor": tf.convert_to_tensor(my_variable),
            "argmax": tf.math.argmax(my_variable),
            "reshaped": tf.reshape(my_variable, [1, 4]),
            "note": "R printed the argmax shape as '(2)'; Python prints '(2,)'"}


@cell("003.assign_cast", "a$assign(as.integer(c(1, 2))); try(a$assign(c(1.0, 2.0, 3.0)))",
      "int values assigned to a float32 variable are converted; the returned value prints "
      "as 'UnreadVariable'; a 3-value assign raises the shape-mismatch ValueError")
def _():
    a = tf.Variable([2.0, 3.0])
    r = a.assign([1, 2])
    r_repr = repr(r)
    error = None
    try:
        a.assign([1.0, 2.0, 3.0])
    except Exception as e:
        error = e
    return {"assign_returned_repr": r_repr, "a": a, "error": error}


@cell("003.assign_dtype_probe", "(none: the R guide's 'input is automatically cast')",
      "which values assign converts to a float32 / int32 / bool variable and which it "
      "refuses")
def _():
    out = {"probe": True}
    cases = [
        ("python_int_list_to_float32", tf.float32, [1, 2]),
        ("numpy_float64_to_int32", tf.int32, np.array([1.7, -2.7], dtype=np.float64)),
        ("numpy_int32_to_float32", tf.float32, np.array([1, 2], dtype=np.int32)),
        ("numpy_float64_to_float32", tf.float32, np.array([1.5, 2.5], dtype=np.float64)),
        ("tensor_int32_to_float32", tf.float32, tf.constant([1, 2])),
        ("tensor_float64_to_float32", tf.float32, tf.constant([1.5, 2.5], dtype=tf.float64)),
        ("python_float_list_to_int32", tf.int32, [1.5, 2.5]),
        ("python_int_list_to_bool", tf.bool, [1, 0]),
        ("python_int_to_int32_broadcast", tf.int32, 7),
    ]
    for label, dtype, value in cases:
        init = [2, 3] if dtype != tf.bool else [True, False]
        var = tf.Variable(init, dtype=dtype)
        try:
            var.assign(value)
            out[label] = var
        except Exception as e:
            out[label] = {"error": err(e), "value_after": flat(var.numpy())}
    out["note"] = ("probe: Python int lists convert to a float variable, Python float lists "
                   "do not convert to an int one, NumPy arrays convert to the variable's "
                   "dtype (as NumPy's astype would), tf.Tensors of another dtype are refused, "
                   "and a scalar is not broadcast to the variable's shape")
    return out


@cell("003.copy_and_assign_ops", "b <- tf$Variable(a); a$assign(c(5, 6)); assign_add; "
      "assign_sub", "float32 copy semantics and assign_add/assign_sub results")
def _():
    a = tf.Variable([2.0, 3.0])
    b = tf.Variable(a)
    r = a.assign([5.0, 6.0])
    r_repr = repr(r)
    a_after_assign = a.numpy()
    b_now = b.numpy()
    add = a.assign_add([2.0, 3.0]).numpy()
    sub = a.assign_sub([7.0, 9.0]).numpy()
    return {"assign_returned_repr": r_repr, "a_after_assign": a_after_assign, "b": b_now,
            "assign_add_result": add, "assign_sub_result": sub}


@cell("003.same_name", "a <- tf$Variable(my_tensor, name = 'Mark'); b <- ...; a == b",
      "same as 002.same_name")
def _():
    my_tensor = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    a = tf.Variable(my_tensor, name="Mark")
    b = tf.Variable(my_tensor + 1, name="Mark")
    return {"a": a, "b": b, "a_eq_b": a == b}


@cell("003.trainable_false", "tf$Variable(1L, trainable = FALSE)",
      "int32 scalar step counter, trainable False")
def _():
    step_counter = tf.Variable(np.int32(1), trainable=False)
    return {"step_counter": step_counter}


@cell("003.cpu_placement_matmul_colmajor", "with(tf$device('CPU:0'), ...) matmul",
      "a = array(1:6, c(2,3)) (column-major, dtype float32 given to Variable), b = "
      "array(1:6, c(3,2)); a %*% b = [[22, 49], [28, 64]]")
def _():
    with tf.device('CPU:0'):
        a = tf.Variable(r_array(range(1, 7), (2, 3)), dtype="float32")
        b = tf.convert_to_tensor(r_array(range(1, 7), (3, 2)), dtype="float32")
        c = tf.matmul(a, b)
    return {"a": a, "b": b, "c": c,
            "note": "the R int array reaches Python as a NumPy int32 array; Variable(..., "
                    "dtype='float32') converts it"}


@cell("003.cross_device_mul_colmajor", "with(tf$device('GPU:0'), k <- a * b)",
      "column-major a [2,3] times b = array(1:3, c(1,3)) under GPU:0, soft placement")
def _():
    with tf.device('CPU:0'):
        a = tf.Variable(r_array(range(1, 7), (2, 3)), dtype="float32")
        b = tf.Variable(r_array(range(1, 4), (1, 3)), dtype="float32")
    with tf.device('GPU:0'):
        k = a * b
    return {"a": a, "b": b, "k": k}


# ---------------------------------------------------------------------------------------
# Seed 004: the TF1 "Variables" guide, under tf.compat.v1 in a fresh graph per cell.
# Snippets the seed describes but whose code its text lost ("For example:" with nothing
# after) are filled in from the same guide's published code.

RESTORED = " [code lost from the seed's text; restored from the published guide]"
GLOROT_NOTE = ("values come from TensorFlow's own RNG (graph seed %d, op seed derived from "
               "the graph); deterministic for this TensorFlow version only. Deterministic "
               "parts: name, shape, dtype, the bound |x| <= limit" % SEED)


def glorot_limit(shape):
    shape = list(shape)
    if len(shape) < 1:
        fan_in = fan_out = 1
    elif len(shape) == 1:
        fan_in = fan_out = shape[0]
    else:
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        fan_in = shape[-2] * receptive
        fan_out = shape[-1] * receptive
    return float(np.sqrt(6.0 / (fan_in + fan_out)))


@cell("004.get_variable_default", "my_variable = tf.get_variable('my_variable', [1, 2, 3])",
      "default dtype float32 and glorot_uniform initializer")
def _():
    def body(g):
        my_variable = v1.get_variable("my_variable", [1, 2, 3])
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        vals = sess.run(my_variable)
        limit = glorot_limit([1, 2, 3])
        return {"my_variable": my_variable, "_sess": sess,
                "glorot_limit": limit, "glorot_limit_formula":
                "sqrt(6 / (fan_in + fan_out)), fan_in = shape[-2] * prod(shape[:-2]), "
                "fan_out = shape[-1] * prod(shape[:-2]); here fan_in 2, fan_out 3",
                "within_limit": bool(np.all(np.abs(vals) <= limit)),
                "initializer_op": my_variable.initializer.name,
                "collections": collections(g), "note": GLOROT_NOTE}
    return in_graph(body)


@cell("004.get_variable_int_zeros",
      "tf.get_variable('my_int_variable', [1, 2, 3], dtype=tf.int32, "
      "initializer=tf.zeros_initializer)", "int32 [1,2,3] of zeros")
def _():
    def body(g):
        v = v1.get_variable("my_int_variable", [1, 2, 3], dtype=tf.int32,
                            initializer=v1.zeros_initializer)
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return {"my_int_variable": v, "_sess": sess}
    return in_graph(body)


@cell("004.get_variable_from_tensor",
      "tf.get_variable('other_variable', dtype=tf.int32, initializer=tf.constant([23, 42]))",
      "shape taken from the initializer tensor")
def _():
    def body(g):
        v = v1.get_variable("other_variable", dtype=tf.int32,
                            initializer=tf.constant([23, 42]))
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return {"other_variable": v, "_sess": sess}
    return in_graph(body)


@cell("004.get_variable_tensor_with_shape", "(text: 'you should not specify the shape')",
      "a tensor initializer together with a shape is an error")
def _():
    def body(g):
        out = {"probe": True}
        try:
            v1.get_variable("other_variable", shape=[2], dtype=tf.int32,
                            initializer=tf.constant([23, 42]))
            out["error"] = None
        except Exception as e:
            out["error"] = e
        return out
    return in_graph(body)


@cell("004.local_collection",
      "my_local = tf.get_variable('my_local', shape=(), "
      "collections=[tf.GraphKeys.LOCAL_VARIABLES])",
      "collections=[LOCAL_VARIABLES] keeps it out of GLOBAL_VARIABLES, but it still lands "
      "in TRAINABLE_VARIABLES (trainable defaults to True)")
def _():
    def body(g):
        my_local = v1.get_variable("my_local", shape=(),
                                   collections=[v1.GraphKeys.LOCAL_VARIABLES])
        return {"my_local": my_local, "collections": collections(g),
                "note": "the guide says LOCAL_VARIABLES is for variables you don't want "
                        "trainable, but get_variable appends TRAINABLE_VARIABLES to the given "
                        "collections whenever trainable is true (the default); only "
                        "trainable=False (see 004.non_trainable) keeps it out"}
    return in_graph(body)


@cell("004.non_trainable",
      "my_non_trainable = tf.get_variable('my_non_trainable', shape=(), trainable=False)"
      "%s" % RESTORED,
      "trainable=False: global but not trainable")
def _():
    def body(g):
        v = v1.get_variable("my_non_trainable", shape=(), trainable=False)
        return {"my_non_trainable": v, "collections": collections(g)}
    return in_graph(body)


@cell("004.custom_collection",
      "tf.add_to_collection('my_collection_name', my_local); "
      "tf.get_collection('my_collection_name')", "any string names a collection")
def _():
    def body(g):
        my_local = v1.get_variable("my_local", shape=(),
                                   collections=[v1.GraphKeys.LOCAL_VARIABLES])
        before = names(v1.get_collection("my_collection_name"))
        v1.add_to_collection("my_collection_name", my_local)
        after = names(v1.get_collection("my_collection_name"))
        v1.add_to_collection("my_collection_name", my_local)
        twice = names(v1.get_collection("my_collection_name"))
        return {"before": before, "after": after, "after_adding_twice": twice,
                "all_keys": sorted(g.get_all_collection_keys()),
                "note": "adding the same object twice keeps both entries (a list, not a set)"}
    return in_graph(body)


@cell("004.device_gpu1",
      "with tf.device('/device:GPU:1'): v = tf.get_variable('v', [1])",
      "the device is kept as written; running the initializer with no GPU fails with soft "
      "placement off and runs on CPU with it on")
def _():
    def body(g):
        with v1.device("/device:GPU:1"):
            v = v1.get_variable("v", [1])
        out = {"v": v, "initializer_device": v.initializer.device}
        for soft in (False, True):
            key = "session_soft_placement_%s" % ("on" if soft else "off")
            cfg = v1.ConfigProto(allow_soft_placement=soft)
            with v1.Session(config=cfg) as sess:
                try:
                    sess.run(v.initializer)
                    out[key] = {"ok": True, "shape": list(sess.run(v).shape)}
                except Exception as e:
                    out[key] = {"error": err(e)}
        out["note"] = ("graph-mode error messages have TensorFlow's Python stack traces "
                       "removed (message_cleaned); the value is random (glorot) so only "
                       "its shape is recorded")
        return out
    return in_graph(body)


@cell("004.replica_device_setter",
      "with tf.device(tf.train.replica_device_setter(cluster=cluster_spec)): "
      "v = tf.get_variable('v', shape=[20, 20])%s" % RESTORED,
      "variables go to the parameter servers round-robin, other ops to the worker")
def _():
    def body(g):
        cluster_spec = {
            "ps": ["ps0:2222", "ps1:2222"],
            "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]}
        with v1.device(v1.train.replica_device_setter(cluster=cluster_spec)):
            v = v1.get_variable("v", shape=[20, 20])
            w = v1.get_variable("w", shape=[20])
            x = v1.get_variable("x", shape=[3])
            y = tf.matmul(v, tf.ones([20, 1]))
        return {"v_device": v.device, "w_device": w.device, "x_device": x.device,
                "matmul_device": y.device, "v": v,
                "note": "seed cell creates v only; w, x and the matmul show the round-robin "
                        "and the worker placement"}
    return in_graph(body)


@cell("004.global_variables_initializer", "session.run(tf.global_variables_initializer())",
      "one op initializes every variable in GLOBAL_VARIABLES, not LOCAL_VARIABLES")
def _():
    def body(g):
        a = v1.get_variable("a", [2], initializer=v1.ones_initializer())
        b = v1.get_variable("b", [2], initializer=v1.constant_initializer(3.0))
        loc = v1.get_variable("loc", [2], initializer=v1.zeros_initializer(),
                              collections=[v1.GraphKeys.LOCAL_VARIABLES])
        init = v1.global_variables_initializer()
        sess = v1.Session()
        sess.run(init)
        uninit = [x.decode() for x in sess.run(v1.report_uninitialized_variables(
            v1.global_variables() + v1.local_variables()))]
        return {"init_op_name": init.name, "init_op_type": init.type, "a": a, "b": b,
                "still_uninitialized": uninit, "_sess": sess,
                "note": "variables a, b, loc are stand-ins (the seed's snippet has no "
                        "variables of its own)"}
    return in_graph(body)


@cell("004.run_single_initializer", "session.run(my_variable.initializer)",
      "running one variable's initializer initializes only that variable")
def _():
    def body(g):
        my_variable = v1.get_variable("my_variable", [2], initializer=v1.ones_initializer())
        other = v1.get_variable("other", [2], initializer=v1.ones_initializer())
        sess = v1.Session()
        sess.run(my_variable.initializer)
        uninit = [x.decode() for x in sess.run(v1.report_uninitialized_variables())]
        return {"initializer_op": my_variable.initializer.name,
                "initializer_type": my_variable.initializer.type,
                "my_variable": my_variable, "uninitialized_after": uninit, "_sess": sess}
    return in_graph(body)


@cell("004.report_uninitialized", "print(session.run(tf.report_uninitialized_variables()))",
      "names (no ':0') of the variables not yet initialized, as a bytes array")
def _():
    def body(g):
        v1.get_variable("my_variable", [1, 2, 3])
        v1.get_variable("my_int_variable", [1, 2, 3], dtype=tf.int32,
                        initializer=v1.zeros_initializer)
        with v1.variable_scope("conv1"):
            v1.get_variable("weights", [2])
        report = v1.report_uninitialized_variables()
        with v1.Session() as session:
            before = session.run(report)
            print(before)
            session.run(v1.global_variables_initializer())
            after = session.run(report)
            print(after)
        return {"before": before, "after": after, "report_op": report.name,
                "report_dtype": report.dtype.name}
    return in_graph(body)


@cell("004.read_uninitialized_error", "(text: 'Before you can use a variable, it must be "
      "initialized')", "reading a variable before initializing it: FailedPreconditionError "
      "(resource variable, TF2 default) and TF1's RefVariable wording")
def _():
    def body(g):
        v = v1.get_variable("v", [1])
        r = v1.get_variable("r", [1], use_resource=False)
        out = {"probe": True, "v": v, "r": r}
        with v1.Session() as sess:
            for label, t in (("resource_variable_read", v.read_value()),
                             ("ref_variable_read", r)):
                try:
                    sess.run(t)
                    out[label] = None
                except Exception as e:
                    out[label] = e
        out["note"] = ("get_variable under TF2 makes ResourceVariables; use_resource=False "
                       "gives the TF1 RefVariable whose message the TF1 guide's users saw")
        return out
    return in_graph(body)


@cell("004.initialized_value",
      "v = tf.get_variable('v', shape=(), initializer=tf.zeros_initializer()); "
      "w = tf.get_variable('w', initializer=v.initialized_value() + 1)",
      "w's initial value depends on v: ResourceVariable.initialized_value() raises "
      "NotImplementedError; with RefVariables one global initializer run fails under TF2 "
      "control flow and gives v 0, w 1 under TF1 control flow")
def _():
    def body(g):
        v = v1.get_variable("v", shape=(), initializer=v1.zeros_initializer())
        try:
            v.initialized_value()
            resource_error = None
        except Exception as e:
            resource_error = e
        # The TF1 guide's variables were RefVariables: the same cell with those. With
        # TF2's control flow (cond_v2) the cond inside initialized_value() reads v before
        # it is initialized; TF1's control flow gates the read as the guide expected.
        out = {"resource_variable_error": resource_error}
        for label, cf_v2 in (("control_flow_v2", True), ("control_flow_v1", False)):
            with tf.Graph().as_default():
                v1.set_random_seed(SEED)
                if not cf_v2:
                    v1.disable_control_flow_v2()
                try:
                    v = v1.get_variable("v_ref", shape=(), initializer=v1.zeros_initializer(),
                                        use_resource=False)
                    w = v1.get_variable("w_ref", initializer=v.initialized_value() + 1,
                                        use_resource=False)
                    with v1.Session() as sess:
                        try:
                            sess.run(v1.global_variables_initializer())
                            out[label] = {"v": describe(v, sess), "w": describe(w, sess)}
                        except Exception as e:
                            out[label] = {"global_init_error": err(e)}
                finally:
                    v1.enable_control_flow_v2()
        out["note"] = ("TF2's get_variable makes ResourceVariables, whose initialized_value() "
                       "raises NotImplementedError (empty message). With use_resource=False "
                       "(RefVariables v_ref, w_ref, as in TF1) the global initializer fails "
                       "under TF2 control flow and works (v 0, w 1) under TF1 control flow")
        return out
    return in_graph(body)


@cell("004.use_in_expression", "w = v + 1%s" % RESTORED,
      "a variable in an expression becomes a tensor ('add:0')")
def _():
    def body(g):
        v = v1.get_variable("v", shape=(), initializer=v1.zeros_initializer())
        w = v + 1
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return {"v": v, "w": w, "w_type": type(w).__name__, "_sess": sess}
    return in_graph(body)


@cell("004.assign_add_session",
      "assignment = v.assign_add(1); tf.global_variables_initializer().run(); "
      "sess.run(assignment)", "each run of the assign_add op adds 1 and returns the new value")
def _():
    def body(g):
        v = v1.get_variable("v", shape=(), initializer=v1.zeros_initializer())
        assignment = v.assign_add(1)
        with v1.Session() as sess:
            v1.global_variables_initializer().run()
            first = sess.run(assignment)
            second = sess.run(assignment)
            final = sess.run(v)
        return {"first_run": first, "second_run": second, "final": final,
                "assignment_type": type(assignment).__name__}
    return in_graph(body)


@cell("004.read_value_control_deps",
      "with tf.control_dependencies([assignment]): w = v.read_value()%s" % RESTORED,
      "read_value under a control dependency sees the assign_add")
def _():
    def body(g):
        v = v1.get_variable("v", shape=(), initializer=v1.zeros_initializer())
        assignment = v.assign_add(1)
        with tf.control_dependencies([assignment]):
            w = v.read_value()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            first = sess.run(w)
            second = sess.run(w)
        return {"w_name": w.name, "first_run": first, "second_run": second}
    return in_graph(body)


def conv_relu(input, kernel_shape, bias_shape):
    # Create variable named "weights".
    weights = v1.get_variable("weights", kernel_shape,
                              initializer=v1.random_normal_initializer())
    # Create variable named "biases".
    biases = v1.get_variable("biases", bias_shape,
                             initializer=v1.constant_initializer(0.0))
    conv = tf.nn.conv2d(input, weights, strides=[1, 1, 1, 1], padding='SAME')
    return tf.nn.relu(conv + biases)


def my_image_filter(input_images):
    with v1.variable_scope("conv1"):
        # Variables created here will be named "conv1/weights", "conv1/biases".
        relu1 = conv_relu(input_images, [5, 5, 32, 32], [32])
    with v1.variable_scope("conv2"):
        # Variables created here will be named "conv2/weights", "conv2/biases".
        return conv_relu(relu1, [5, 5, 32, 32], [32])


def var_table(g):
    return [{"name": v.name, "shape": shape_of(v.shape), "dtype": v.dtype.base_dtype.name,
             "trainable": v.trainable}
            for v in g.get_collection(v1.GraphKeys.GLOBAL_VARIABLES)]


RANDOM_INPUT_NOTE = ("inputs are tf.random_normal and weights random_normal: only names, "
                     "shapes and counts are recorded")


@cell("004.conv_relu_twice_error",
      "x = conv_relu(input1, ...); x = conv_relu(x, ...)  # This fails. [conv_relu's code "
      "lost from the seed's text; restored from the published guide]",
      "calling get_variable('weights') twice in one scope: ValueError 'already exists'")
def _():
    def body(g):
        input1 = v1.random_normal([1, 10, 10, 32])
        x = conv_relu(input1, kernel_shape=[5, 5, 32, 32], bias_shape=[32])
        error = None
        try:
            x = conv_relu(x, kernel_shape=[5, 5, 32, 32], bias_shape=[32])
        except Exception as e:
            error = e
        return {"error": error, "variables": var_table(g), "first_output": x,
                "note": RANDOM_INPUT_NOTE}
    return in_graph(body)


@cell("004.variable_scope_names", "my_image_filter(input_images) with variable_scope conv1/2",
      "variable scopes prefix names: conv1/weights:0, conv1/biases:0, conv2/...")
def _():
    def body(g):
        input1 = v1.random_normal([1, 10, 10, 32])
        out = my_image_filter(input1)
        return {"variables": var_table(g), "output": out, "note": RANDOM_INPUT_NOTE}
    return in_graph(body)


def share_case(mode):
    def body(g):
        input1 = v1.random_normal([1, 10, 10, 32])
        input2 = v1.random_normal([1, 20, 20, 32])
        if mode == "reuse_true":
            with v1.variable_scope("model"):
                output1 = my_image_filter(input1)
            with v1.variable_scope("model", reuse=True):
                output2 = my_image_filter(input2)
        elif mode == "reuse_variables":
            with v1.variable_scope("model") as scope:
                output1 = my_image_filter(input1)
                scope.reuse_variables()
                output2 = my_image_filter(input2)
        else:
            with v1.variable_scope("model") as scope:
                output1 = my_image_filter(input1)
            with v1.variable_scope(scope, reuse=True):
                output2 = my_image_filter(input2)
        return {"variables": var_table(g), "output1": output1, "output2": output2,
                "variable_count": len(v1.global_variables()),
                "trainable_count": len(v1.trainable_variables()),
                "note": RANDOM_INPUT_NOTE + "; the second call creates no variables"}
    return in_graph(body)


@cell("004.scope_reuse_true", "variable_scope('model') then variable_scope('model', "
      "reuse=True)", "second my_image_filter reuses model/conv1/weights:0 etc.")
def _():
    return share_case("reuse_true")


@cell("004.scope_reuse_variables", "scope.reuse_variables()",
      "reuse switched on inside the same scope")
def _():
    return share_case("reuse_variables")


@cell("004.scope_from_scope_object", "variable_scope(scope, reuse=True)",
      "reopening a scope by its object")
def _():
    return share_case("scope_object")


@cell("004.get_variable_does_not_exist", "(text: reuse=True shares existing variables)",
      "get_variable of a new name in a reuse=True scope: ValueError 'does not exist'")
def _():
    def body(g):
        with v1.variable_scope("model"):
            v1.get_variable("weights", [2])
        out = {"probe": True}
        with v1.variable_scope("model", reuse=True):
            try:
                v1.get_variable("foo", [2])
                out["error"] = None
            except Exception as e:
                out["error"] = e
            out["reused"] = v1.get_variable("weights", [2])
        return out
    return in_graph(body)


@cell("004.reuse_shape_mismatch", "(text: reuse shares a variable of the same name)",
      "reusing a variable with another shape or dtype: ValueError")
def _():
    def body(g):
        with v1.variable_scope("model"):
            v1.get_variable("weights", [5, 5, 32, 32])
        out = {"probe": True}
        with v1.variable_scope("model", reuse=True):
            try:
                v1.get_variable("weights", [5, 5, 32, 16])
                out["shape_error"] = None
            except Exception as e:
                out["shape_error"] = e
            try:
                v1.get_variable("weights", [5, 5, 32, 32], dtype=tf.float64)
                out["dtype_error"] = None
            except Exception as e:
                out["dtype_error"] = e
        return out
    return in_graph(body)


@cell("004.graph_variable_names", "(text: names; compare 000/002 same_name in eager mode)",
      "in a graph, tf.Variable names are made unique (Variable:0, Variable_1:0, v:0, v_1:0); "
      "get_variable names are not")
def _():
    def body(g):
        a = v1.Variable(1.0)
        b = v1.Variable(1.0)
        c = v1.Variable(1.0, name="v")
        d = v1.Variable(1.0, name="v")
        with v1.variable_scope("s"):
            e = v1.Variable(1.0, name="v")
            f = v1.get_variable("gv", [])
        return {"probe": True, "names": [x.name for x in (a, b, c, d, e, f)],
                "note": "eager mode keeps duplicate names (see 002.same_name)"}
    return in_graph(body)


# ---------------------------------------------------------------------------------------

SKIPPED = [
    {"seed": "000", "cells": "In [1]", "why": "import only, no output"},
    {"seed": "000", "cells": "In [16]", "why": "imports numpy and matplotlib, no output"},
    {"seed": "001", "cells": "all", "why": "the guide's prose with its code cells stripped; "
     "its code is the 002 notebook's, recorded there"},
    {"seed": "002", "cells": "In [None] (licence), In [4]",
     "why": "no output (licence comment; set_log_device_placement(False))"},
    {"seed": "003", "cells": "tensorflow::tf_config(), sessionInfo(), pip freeze",
     "why": "describe the R author's machine (TensorFlow 2.11, R 4.2.1), not TensorFlow"},
]


def to_json(obj, indent=0):
    """JSON with one key per line but lists of scalars (values, shapes) on one line."""
    pad = " " * (indent + 1)

    def scalar_list(x):
        return isinstance(x, list) and all(
            not isinstance(y, (dict, list)) or
            (isinstance(y, list) and all(not isinstance(z, (dict, list)) for z in y))
            for y in x)

    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = ["%s%s: %s" % (pad, json.dumps(k, ensure_ascii=False),
                               to_json(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(obj, list) and not scalar_list(obj):
        items = [pad + to_json(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--placement-log-child", metavar="PATH",
                    help="internal: record the placement logs into PATH and exit")
    args = ap.parse_args()
    if args.placement_log_child:
        placement_logs(args.placement_log_child)
        return

    logs = run_placement_child()

    tf.config.experimental.enable_op_determinism()
    entries = {}
    for key, cells, desc, placement_log, fn in CELLS:
        if key in entries:
            raise SystemExit("duplicate key " + key)
        entries[key] = run_cell(key, cells, desc, placement_log, fn, logs)

    doc = {
        "tf_version": tf.__version__,
        "generated_by": "tests/reference/seeds_tf.py",
        "python_version": platform.python_version(),
        "numpy_version": np.__version__,
        "platform": "CPU only (CUDA_VISIBLE_DEVICES='', TF_ENABLE_ONEDNN_OPTS=0)",
        "random_seed": SEED,
        "conventions": {
            "values": "row-major flattened; complex as [re, im]; float32 values written as "
                      "the exact double they widen to",
            "shape": "list of dims; [] for a scalar",
            "error": "{type, module, message}; message_cleaned=true when TensorFlow's Python "
                     "stack traces (machine paths) were cut from a graph-mode message",
            "probe": "true for entries that test behaviour a seed states in words rather "
                     "than in a code cell",
            "placement_log": "[op, device] for each 'Executing op OP in device DEV' line "
                             "TensorFlow logged while the cell ran (002 cells)",
            "repr/printed": "Python's text, as printed; its number formatting follows NumPy "
                            "(numpy_version), so compare values, not these strings, except "
                            "where an entry is about the text",
        },
        "skipped": SKIPPED,
        "entry_count": len(entries),
        "entries": entries,
    }
    text = to_json(doc)
    json.loads(text)  # valid JSON, or fail here
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print("wrote %s: %d entries, %d bytes, TensorFlow %s"
          % (args.out, len(entries), len(text) + 1, tf.__version__))


if __name__ == "__main__":
    main()
