#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz harnesses (tests/fuzz/corpus/<harness>/); the committed
files came from this script. The input layouts are described at the top of fuzz_idx.c,
fuzz_csv.c and fuzz_events.c. Usage: python3 tests/fuzz/make_corpus.py"""
import glob
import gzip
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def idx(type_code, dims, data):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data


def gz(b):
    return gzip.compress(b, mtime=0)


def idx_input(images, labels=None, gz_img=False, gz_lab=False):
    flags = (1 if gz_img else 0) | (2 if gz_lab else 0) | (4 if labels is not None else 0)
    return bytes([flags]) + struct.pack("<H", len(images)) + images + (labels or b"")


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def crc32c(b):
    crc = 0xFFFFFFFF
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def safetensors(tensors, metadata=None, tapeflow=True, pad=True):
    """tensors: (name, dtype, shape, bytes) in data order."""
    import json
    meta = dict(metadata or {})
    if tapeflow:
        meta["tapeflow.format_version"] = "1"
        for name, _, _, data in tensors:
            meta["tapeflow.crc32c/" + name] = "%08x" % crc32c(data)
    header, at = {}, 0
    if meta:
        header["__metadata__"] = meta
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(t[3] for t in tensors)


def safetensors_corpus():
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    files = {
        "f32": safetensors([("w", "F32", [2, 3], f32)]),
        "all_dtypes": safetensors([
            ("i64", "I64", [2], struct.pack("<2q", -1, 7)),
            ("f64", "F64", [1], struct.pack("<d", 0.5)),
            ("c128", "F64", [1, 2], struct.pack("<2d", 1, -1)),
            ("c64", "C64", [1], struct.pack("<2f", 1, 2)),
            ("f32", "F32", [], struct.pack("<f", 3)),
            ("i32", "I32", [2, 1], struct.pack("<2i", 5, -5)),
            ("bf16", "BF16", [1], b"\x80\x3f"),
            ("f16", "F16", [2], b"\x00\x3c\x00\xc0"),
            ("b", "BOOL", [3], b"\x01\x00\x01"),
            ("empty", "F32", [0, 4], b""),
        ], {"tapeflow.dtype/c128": "complex128", "note": "seed"}),
        "foreign": safetensors([("a", "U8", [4], b"abcd"), ("b", "F16", [1], b"\x00\x3c")],
                               {"format": "pt"}, tapeflow=False, pad=False),
        "empty": safetensors([], tapeflow=False),
        "dup": struct.pack("<Q", 96) + (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                        b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
                                        ).ljust(96) + b"\0" * 4,
    }
    for name, data in files.items():
        write("safetensors", name, b"\0" + data)
    write("safetensors", "f32_by_path", b"\1" + files["f32"])
# ---- TensorBoard event files (fuzz_events): TFRecords of hand-encoded Event protobufs ----

def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def f_len(field, b):
    return key(field, 2) + varint(len(b)) + b


def f_double(field, v):
    return key(field, 1) + struct.pack("<d", v)


def f_float(field, v):
    return key(field, 5) + struct.pack("<f", v)


def f_varint(field, v):
    return key(field, 0) + varint(v)


def event(step, body, wall=1.7e9):
    return f_double(1, wall) + f_varint(2, step) + body


def summary_value(tag, payload):
    return f_len(5, f_len(1, f_len(1, tag) + payload))


def plugin(name, data_class=None):
    m = f_len(1, f_len(1, name))
    if data_class is not None:
        m += f_varint(4, data_class)
    return f_len(9, m)


def events_input(records, via_file=False):
    return bytes([1 if via_file else 0]) + b"".join(records)


def main():
    img = idx(0x08, [3, 2, 2], bytes(range(12)))
    lab = idx(0x08, [3], bytes([0, 2, 1]))
    write("idx", "ubyte_pair", idx_input(img, lab))
    write("idx", "ubyte_images_only", idx_input(img))
    write("idx", "ubyte_pair_gzipped_here", idx_input(img, lab, True, True))
    write("idx", "ubyte_pair_gzip_files", idx_input(gz(img), gz(lab)))
    write("idx", "byte_images", idx_input(idx(0x09, [2, 3], bytes([1, 0xFF, 3, 0x80, 5, 6]))))
    write("idx", "int16_images", idx_input(idx(0x0B, [2, 1], struct.pack(">hh", -7, 300)),
                                           idx(0x0B, [2], struct.pack(">hh", 1, 0))))
    write("idx", "int32_pair", idx_input(idx(0x0C, [2, 2], struct.pack(">4i", 1, -2, 3, 100000)),
                                         idx(0x0C, [2], struct.pack(">2i", 4, 5))))
    write("idx", "float32_images", idx_input(idx(0x0D, [3], struct.pack(">3f", 0.5, -1.25, 3e8)),
                                             idx(0x0D, [3], struct.pack(">3f", 0, 1, 2)), True))
    write("idx", "float64_images", idx_input(idx(0x0E, [1, 2], struct.pack(">2d", 1e-3, -2.5)),
                                             idx(0x08, [1], b"\x07")))
    write("idx", "rank8_images", idx_input(idx(0x08, [1] * 8, b"\x2a")))
    # near-valid: truncated data, a cut gzip trailer, a bad CRC, trailing bytes
    write("idx", "truncated_data", idx_input(img[:-3], lab))
    g = gz(img)
    write("idx", "gzip_cut_in_crc", idx_input(g[:-6], lab))
    bad = bytearray(g)
    bad[-8] ^= 0xFF
    write("idx", "gzip_bad_crc", idx_input(bytes(bad), lab))
    write("idx", "trailing_bytes", idx_input(img + b"\0", lab))
    write("idx", "labels_mismatch", idx_input(img, idx(0x08, [2], b"\0\1")))

    def csv_input(text, header=False, label=0, semicolon=False, gz_here=False):
        flags = (1 if header else 0) | (label << 1) | (8 if semicolon else 0) | (16 if gz_here else 0)
        return bytes([flags]) + text

    write("csv", "header_last_label", csv_input(b"a,b,label\n1,2,0\n3.5,-4,1\n", True, 0))
    write("csv", "no_header_first_label", csv_input(b"1,0.5,2\n0,1e2,4\n", False, 1))
    write("csv", "label_by_name", csv_input(b"x;label;y\n1;2;3\n4;5;6\n", True, 2, True))
    write("csv", "no_labels_crlf", csv_input(b"1,2,3\r\n4,5,6\r\n\r\n7,8,9", False, 3))
    write("csv", "blank_lines_spaces", csv_input(b" 1 , 2 ,3\n\n  \n4,5,6\n", False, 0))
    write("csv", "gzipped_here", csv_input(b"a,b,label\n1,2,3\n4,5,6\n", True, 0, False, True))
    write("csv", "gzip_file", csv_input(gz(b"f1,f2,label\n0.1,0.2,1\n0.3,0.4,0\n"), True, 2))
    write("csv", "gzip_cut", csv_input(gz(b"1,2,3\n4,5,6\n" * 20)[:-5], False, 0))
    write("csv", "quoted_fields", csv_input(b'"a","b","label"\n"1","2","0"\n', True, 0))
    write("csv", "nan_inf_hex", csv_input(b"nan,inf,0x1p3,1\n-inf,1e39,2,0\n", False, 0))
    write("csv", "ragged", csv_input(b"1,2,3\n4,5\n", False, 0))
    write("csv", "nul_byte", csv_input(b"1,2\x003\n4,5,6\n", False, 0))

    config_corpus()
    config_dict()
    events_corpus()


# ---- fuzz_config: the shipped and the broken configs, some with overrides -------------------

SET_MARK = b"\n#%set\n"  # fuzz_config.c: the lines after it are overrides
FASHION = b"/usr/share/datasets/fashion-mnist/"  # fuzz_config's base dir has data/ files
# reproducers and a few valid graphs that fuzz_config made, committed as libFuzzer wrote them
# (kept when the corpus is written again)
FOUND = {"crash_uniform_equal_bounds", "diff-empty-input", "diff-empty-key",
         "found_resnet_layer_in_comment", "found_transformer_block_without_norm"}


def config_corpus():
    d = os.path.join(HERE, "corpus", "config")
    if os.path.isdir(d):
        for f in os.listdir(d):
            if f not in FOUND:
                os.remove(os.path.join(d, f))
    for src in sorted(glob.glob(os.path.join(TOP, "configs", "*.yaml"))):
        text = open(src, "rb").read()
        name = os.path.basename(src)[:-5]
        write("config", name, text)
        if FASHION in text:  # valid in the harness: the files exist (empty) under its base dir
            write("config", name + "_local", text.replace(FASHION, b"data/"))
    for src in sorted(glob.glob(os.path.join(TOP, "tests", "configs", "bad", "*.yaml"))):
        write("config", "bad_" + os.path.basename(src)[:-5], open(src, "rb").read())
    xor = open(os.path.join(TOP, "configs", "xor.yaml"), "rb").read()
    sets = {
        "xor_set_lr": [b"optimizer.learning_rate=3e-4"],
        "xor_set_many": [b"training.epochs=2", b"model.layers[0].dense.units=8",
                         b"optimizer.schedule={kind: cosine, decay_steps: 100}",
                         b"model.layers[1].dense.kernel_initializer={random_normal: {stddev: 0.02}}"],
        "xor_set_new_layer": [b"model.layers[2]={dropout: {rate: 0.5}}", b"checkpoint.keep=0"],
        "xor_set_bad": [b"optimizer.kind=adamm", b"training.epochs", b"=1", b"model.layers[9].x=1",
                        b"data.train.path=nowhere.csv"],
        "xor_set_types": [b"training.epochs='3'", b"metrics=[accuracy, accuracy]",
                          b"model.input_shape=[1, 2]", b"optimizer.momentum=0.9"],
    }
    # found by fuzz_config: an initializer set to null (here by an empty override) was valid
    # without a kind, and tfl_config_format read the kind names at index -1
    sets["crash_null_initializer_override"] = [b"model.layers[1].dense.kernel_initializer="]
    for name, lines in sets.items():
        write("config", name, xor + SET_MARK + b"\n".join(lines) + b"\n")
    # a conv net and every other layer kind, valid
    write("config", "all_layers", b"""data:
  train: {format: idx, images: data/train-images-idx3-ubyte.gz, labels: data/train-labels-idx1-ubyte.gz}
  validation_split: 0.1
  standardize: true
model:
  input_shape: [8, 8, 1]
  layers:
    - conv2d: {filters: 2, kernel_size: [3, 3], padding: same, strides: 1, dilation_rate: 1}
    - batch_normalization: {momentum: 0.9, epsilon: 1.e-5}
    - activation: {activation: gelu}
    - max_pooling2d: {pool_size: 2}
    - average_pooling2d: {pool_size: [2, 2], strides: null, padding: valid}
    - reshape: {target_shape: [-1]}
    - dropout: {rate: 0.25, seed: 7}
    - dense: {units: 3, use_bias: false, kernel_initializer: {truncated_normal: {mean: 0, stddev: 0.1, seed: 3}}}
loss: categorical_crossentropy
optimizer: {kind: sgd, formula: pytorch, momentum: 0.9, dampening: 0.1, nesterov: false, clipnorm: 1.0,
            schedule: {kind: step, decay_steps: 10, decay_rate: 0.5, warmup_steps: 2}}
training: {epochs: 1_000, batch_size: 16, drop_remainder: true, device: CPU:0, on_nonfinite: skip}
checkpoint: {directory: ckpt, every: 2, keep: 3, save_best_only: true, monitor: val_accuracy}
logging: {metrics_csv: m.csv, log_interval: 10}
""")
    write("config", "embedding", b"""format_version: 1
data:
  train: {format: csv, path: data/xor.csv, header: true, label_name: label, delimiter: ';'}
  test: {format: csv, path: data/xor.csv, no_labels: true}
model:
  name: emb
  input_shape: [4]
  layers:
    - embedding: {input_dim: 10, output_dim: 3, embeddings_initializer: {random_uniform: {minval: -1, maxval: 1}}}
    - flatten
    - dense: {units: 1, activation: sigmoid, bias_initializer: {constant: {value: 0.5}}}
loss: binary_crossentropy
metrics: []
optimizer: {kind: rmsprop, rho: 0.8, centered: true, global_clipnorm: .5}
""")
    graph_corpus()


def graph_corpus():
    """Layer graphs: inputs by name, merges, and the graph's diagnostics (configs/graph.c)."""
    head = (b"data:\n  train: {format: csv, path: data/xor.csv, header: true}\n"
            b"model:\n  input_shape: [4]\n  layers:\n")
    tail = b"loss: sparse_categorical_crossentropy\noptimizer: {kind: adam}\n"

    def graph(name, layers, sets=None, shape=None):
        text = head if shape is None else head.replace(b"[4]", shape)
        text += b"".join(b"    - " + l + b"\n" for l in layers) + tail
        if sets:
            text += SET_MARK + b"\n".join(sets) + b"\n"
        write("config", "graph_" + name, text)

    graph("residual", [b"dense: {name: d1, units: 4, activation: relu}",
                       b"dense: {name: d2, units: 4}",
                       b"add: {name: res, inputs: [d2, input]}",
                       b"dense: {name: d3, units: 4, activation: relu}",
                       b"dense: {name: d4, units: 4}",
                       b"add: {name: res2, inputs: [d4, res]}",
                       b"dense: {units: 2}"])
    graph("residual_conv", [b"conv2d: {name: c1, filters: 3, kernel_size: 3, padding: same}",
                            b"batch_normalization: {name: bn}",
                            b"add: {name: sum, inputs: [bn, input]}",
                            b"global_average_pooling2d",
                            b"dense: {units: 2}"], shape=b"[4, 4, 3]")
    graph("concatenate_axis", [b"dense: {name: a, units: 3, inputs: input}",
                               b"dense: {name: b, units: 5, inputs: input}",
                               b"concatenate: {name: cat, inputs: [a, b, input], axis: -1}",
                               b"dense: {units: 2}"])
    graph("concatenate_axis1", [b"reshape: {name: r, target_shape: [2, 2]}",
                                b"concatenate: {inputs: [r, r], axis: 1}",
                                b"flatten",
                                b"dense: {units: 2}"])
    # found by fuzz_config from this seed: it was valid, the built layer got no axis (every
    # concatenation joined the last axis)
    graph("concatenate_axis_out_of_rank", [b"concatenate: {inputs: [input, input], axis: 3}",
                                           b"dense: {units: 2}"])
    graph("concatenate_axis0", [b"concatenate: {inputs: [input, input], axis: 0}",
                                b"dense: {units: 2}"])
    graph("multiply", [b"dense: {name: gate, units: 4, activation: sigmoid}",
                       b"multiply: {inputs: [gate, input]}",
                       b"dense: {units: 2}"])
    graph("add_shapes_differ", [b"dense: {name: a, units: 3}",
                                b"add: {inputs: [a, input]}",
                                b"dense: {units: 2}"])
    graph("cycle", [b"dense: {name: a, units: 4, inputs: c}",
                    b"dense: {name: b, units: 4}",
                    b"add: {name: c, inputs: [b, input]}",
                    b"dense: {units: 2}"])
    graph("self_input", [b"dense: {name: a, units: 4, inputs: a}", b"dense: {units: 2}"])
    graph("forward_reference", [b"dense: {name: a, units: 4, inputs: b}",
                                b"dense: {name: b, units: 4, inputs: input}",
                                b"dense: {units: 2}"])
    graph("unknown_name", [b"dense: {name: first, units: 4}",
                           b"add: {inputs: [frist, input]}",
                           b"dense: {units: 2}"])
    graph("merge_one_input", [b"dense: {name: a, units: 4}", b"add: {inputs: [a]}",
                              b"dense: {units: 2}"])
    graph("merge_default_input", [b"dense: {name: a, units: 4}", b"multiply",
                                  b"dense: {units: 2}"])
    graph("dense_two_inputs", [b"dense: {name: a, units: 4}",
                               b"dense: {units: 2, inputs: [a, input]}"])
    graph("unused_layer", [b"dense: {name: a, units: 4}",
                           b"dense: {name: unused, units: 4, inputs: input}",
                           b"dense: {units: 2, inputs: a}"])
    graph("inputs_scalar", [b"dense: {name: a, units: 4, inputs: input}",
                            b"dense: {units: 2, inputs: a}"])
    graph("inputs_list", [b"dense: {name: a, units: 4, inputs: [input]}",
                          b"dense: {units: 2, inputs: [a]}"])
    graph("inputs_mapping", [b"dense: {name: a, units: 4, inputs: {a: input}}",
                             b"dense: {units: 2}"])
    graph("inputs_null", [b"dense: {units: 4, inputs: null}",
                          b"dense: {units: 2, inputs: }"])
    graph("inputs_empty_list", [b"dense: {units: 4, inputs: []}", b"dense: {units: 2}"])
    graph("inputs_33", [b"dense: {name: a, units: 4}",
                        b"add: {inputs: [" + b", ".join([b"a"] * 33) + b"]}",
                        b"dense: {units: 2}"])
    graph("inputs_32", [b"dense: {name: a, units: 4}",
                        b"add: {inputs: [" + b", ".join([b"a"] * 31) + b", input]}",
                        b"dense: {units: 2}"])
    graph("inputs_odd_names", [b"dense: {name: 'null', units: 4}",
                               b"dense: {name: \"x y,[z]\", units: 4, inputs: input}",
                               b"dense: {name: '2', units: 4, inputs: input}",
                               b"add: {inputs: ['null', \"x y,[z]\", '2']}",
                               b"dense: {units: 2}"])
    graph("inputs_not_names", [b"dense: {units: 4, inputs: [[a], ~, '', {b: c}]}",
                               b"dense: {units: 2}"])
    graph("layer_named_input", [b"dense: {name: input, units: 4}",
                                b"dense: {units: 2, inputs: input}"])
    graph("made_names", [b"dense: {units: 4}", b"dense: {name: dense_1, units: 4}",
                         b"dense: {units: 4, inputs: dense}", b"add: {inputs: [dense_2, dense_1]}",
                         b"dense: {units: 2}"])
    # found while the graph seeds were written: the resolved text cut a list of names at 300
    # bytes a name and 4,096 a line (and a string at 4,096), so it named layers that do not
    # exist; concatenated sizes past INT64_MAX overflowed in shape inference
    ctrl, long = b'"' + b"\\x01" * 127 + b'"', b"n" * 127
    graph("crash_long_names", [b"dense: {units: 4, name: " + ctrl + b"}",
                               b"dense: {units: 4, name: " + long + b", inputs: " + ctrl + b"}",
                               b"add: {inputs: [" + b", ".join([long] * 32) + b"]}",
                               b"dense: {units: 2}"])
    cat = [b"concatenate: {name: c0, inputs: [" + b", ".join([b"input"] * 32) + b"]}"]
    cat += [b"concatenate: {name: c%d, inputs: [%s]}" % (c, b", ".join([b"c%d" % (c - 1)] * 32))
            for c in range(1, 7)]
    graph("crash_concatenate_overflow", cat + [b"dense: {units: 2}"], shape=b"[1000000000]")
    gpt = open(os.path.join(TOP, "configs", "char_transformer.yaml"), "rb").read()
    write("config", "crash_long_text_path", gpt.replace(
        b"/usr/share/games/fortunes/?*.u8", b'"/' + b"p" * 3000 + b"\\x01" * 400 + b'"'))
    xor_layers = [b"dense: {units: 16, activation: tanh}", b"dense: {units: 4}",
                  b"dense: {units: 2}"]
    graph("set_add_inputs", xor_layers,
          [b"model.layers[3]={add: {inputs: [dense, dense_1]}}",
           b"model.layers[4]={dense: {units: 2}}",
           b"model.layers[2].dense.name=head"])
    graph("set_add_inputs_path", xor_layers + [b"add: {inputs: [dense_1, dense_2]}"],
          [b"model.layers[3].add.inputs=[dense_2, input]", b"model.layers[1].dense.units=2"])
    graph("set_inputs_bad", xor_layers,
          [b"model.layers[1].dense.inputs=[nowhere]", b"model.layers[2].dense.inputs={}",
           b"model.layers[0].dense.inputs=", b"model.layers[2].dense.inputs=dense_2"])


def config_dict():
    """config.dict: YAML tokens, the schema's key names and enum values (from configs/schema.c)."""
    schema = open(os.path.join(TOP, "configs", "schema.c")).read()
    words = set(re.findall(r'\{"([a-z0-9_]+)", VT_', schema))  # keys
    words |= set(re.findall(r'static const sec_def \w+ = \{\s*"([a-z_]+)"', schema))
    for body in re.findall(r"ENUM\((.*?)\);", schema, re.S):
        words |= set(re.findall(r'"([a-z0-9_]+)"', body.split(",", 2)[2]))
    tokens = [": ", "- ", "-", "{", "}", "[", "]", ", ", "\n", "\n  ", "\n    - ", "#", "---",
              "...", "'", "\"", "|", ">", "? ", "~", "null", "true", "false", "!", "!!str", "&a",
              "*a", "%YAML 1.2", "%TAG", ".inf", "-.inf", ".nan", "1e-3", "3.e-4", "1_000", "0x10",
              "-1", "0", "1", "2147483648", "9223372036854775807", "1e309", "\t", "\xef\xbb\xbf",
              "\\u0000", "auto", "CPU:0", "GPU:0", "data/xor.csv", "../", "#%set\n", "=",
              "[0]", "layers[0].", "dense.", "optimizer.", "training.", "inputs: ", "inputs: [",
              "input", "add: {inputs: [", ".inputs=", "- add", "- concatenate", "name: "]
    with open(os.path.join(HERE, "config.dict"), "w") as f:
        f.write("# fuzz_config's dictionary (written by make_corpus.py from configs/schema.c)\n")
        for t in tokens:
            f.write('"%s"\n' % t.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\x0A")
                    .replace("\t", "\\x09").replace("\xef\xbb\xbf", "\\xEF\\xBB\\xBF"))
        for w in sorted(words):
            f.write('"%s"\n' % w)



def events_corpus():
    version = record(event(0, f_len(3, b"brain.Event:2")))
    scalar = record(event(7, summary_value(b"loss", f_float(2, 0.25))))
    limits = [-1.0, 0.0, 0.5, 2.0, 1.7976931348623157e308]
    counts = [1.0, 1.0, 2.0, 1.0, 0.0]
    histo = b"".join(f_double(i + 1, v) for i, v in enumerate([-1.0, 2.0, 5.0, 2.0, 5.5]))
    histo += f_len(6, struct.pack("<5d", *limits)) + f_len(7, struct.pack("<5d", *counts))
    histogram = record(event(8, summary_value(b"weights", f_len(5, histo))))
    text_tensor = f_varint(1, 7) + f_len(2, b"") + f_len(8, b"epochs: 5\nlr: 0.1")
    text = record(event(0, summary_value(b"config", plugin(b"text", 2) + f_len(8, text_tensor))))
    start = record(event(41, f_len(7, f_varint(1, 1) + f_len(3, b"resumed"))))
    # TensorFlow 2's forms: tensors with plugin data
    t_float = f_varint(1, 1) + f_len(2, b"") + f_len(5, struct.pack("<f", 1.5))
    t_content = f_varint(1, 2) + f_len(2, b"") + f_len(4, struct.pack("<d", -2.25))
    tf_scalar = record(event(3, summary_value(b"acc", plugin(b"scalars", 1) + f_len(8, t_float))))
    tf_scalar2 = record(event(4, summary_value(b"acc", f_len(8, t_content))))
    dims = f_len(2, f_varint(1, 2)) + f_len(2, f_varint(1, 3))
    rows = struct.pack("<6d", -1.0, 0.0, 3.0, 0.0, 1.0, 4.0)
    t_hist = f_varint(1, 2) + f_len(2, dims) + f_len(4, rows)
    tf_hist = record(event(5, summary_value(b"h", plugin(b"histograms", 2) + f_len(8, t_hist))))
    graph = record(event(0, f_len(4, b"\x0a\x01x")))
    two_values = record(event(9, f_len(5, f_len(1, f_len(1, b"a") + f_float(2, 1.0)) +
                                       f_len(1, f_len(1, b"b") + f_float(2, 2.0)))))
    whole = [version, scalar, histogram, text, start, tf_scalar, tf_scalar2, tf_hist, graph,
             two_values]
    write("events", "all_kinds", events_input(whole))
    write("events", "all_kinds_file", events_input(whole, True))
    write("events", "version_only", events_input([version]))
    write("events", "histogram", events_input([version, histogram]))
    write("events", "tf2_tensors", events_input([version, tf_scalar, tf_scalar2, tf_hist]))
    write("events", "text", events_input([version, text]))
    write("events", "session_start", events_input([version, start, scalar]))
    write("events", "cut_last_record", events_input([version, scalar])[:-5])
    write("events", "cut_header", events_input([version, scalar[:7]]))
    bad = bytearray(events_input([version, scalar]))
    bad[-3] ^= 0x40
    write("events", "bad_data_crc", bytes(bad))
    bad = bytearray(events_input([version, scalar]))
    bad[len(version) + 1 + 2] ^= 1
    write("events", "bad_length_crc", bytes(bad))
    write("events", "bad_protobuf", events_input([record(b"\x2a\x05\x0a\x09"),
                                                  record(b"\x0b\x00")]))
    tf_file = os.path.join(HERE, "..", "reference", "fixtures", "tf_summary.tfevents")
    if os.path.exists(tf_file):  # TensorFlow's own writer (tests/reference/events_tb.py)
        with open(tf_file, "rb") as f:
            write("events", "tf_summary", events_input([f.read()], True))
    write("events", "ragged_packed", events_input([record(event(1, summary_value(
        b"h", f_len(5, f_len(6, b"\x00" * 5)))))]))



def text_corpus():
    """fuzz_text.c: [flags] [file]; flags: context - 1 (bits 0-2), chars (3), stride (4-5),
    subset (6-7)."""
    fortune = b"You will be surprised by a loud noise.\n%\nA day for firm decisions!\n%\n"
    write("text", "bytes_context8", bytes([7]) + fortune)
    write("text", "chars_stride1", bytes([3 | 8 | 16]) + fortune)
    write("text", "validation_part", bytes([2 | 128]) + fortune)
    write("text", "training_part_chars", bytes([4 | 8 | 64]) + fortune)
    write("text", "utf8", bytes([1]) + "caf\u00e9 \u20ac \U0001F600 na\u00efve\n".encode())
    write("text", "latin1_accent", bytes([0]) + b"a" * 150 + b"\xe9" + b"b" * 50)
    write("text", "nul_byte", bytes([0]) + b"text\0more text")
    write("text", "invalid_utf8", bytes([0]) + b"\xff\xfe" * 20)
    write("text", "too_short", bytes([7]) + b"short")
    write("text", "empty", bytes([0]))


if __name__ == "__main__":
    safetensors_corpus()
    main()
    text_corpus()
