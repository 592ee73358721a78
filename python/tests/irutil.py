"""A tiny structural reader for the builder's MLIR text (test helper only).

It understands exactly the layout ``autoshard.models`` prints (one argument
per line, one op per line) and checks SSA well-formedness: every operand is
defined before use in its function and has the type the op's functional type
claims; every call matches its callee's signature; every return matches the
function's result types.
"""

import math
import re

_FUNC = re.compile(r"^  func\.func (private )?@(\w+)\($")
_ARG = re.compile(r"^      (%\w+): (tensor<[^>]*>)(?: \{(.*)\})?[,)]$")
_RES = re.compile(r"^      -> (.*) \{$")
_OP = re.compile(r"^    (%\w+(?:, %\w+)*) = ([\w.]+)(.*)$")
_RET = re.compile(r"^    return (.*) : (.*)$")


def split_types(s):
    s = s.strip()
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    return [t.strip() for t in re.findall(r"tensor<[^>]*>", s)]


def shape_of(t):
    body = t[len("tensor<"):-1]
    parts = body.split("x")
    return tuple(int(p) for p in parts[:-1]), parts[-1]


def parse_attrs(s):
    """{k = v, unit} -> dict (values as raw strings; unit attrs -> True)."""
    out = {}
    if not s:
        return out
    for part in re.findall(r'(?:[^,"]|"[^"]*")+', s):
        part = part.strip()
        if " = " in part:
            k, v = part.split(" = ", 1)
            v = v.strip()
            if v.startswith('"'):
                v = v[1:-1]
            out[k.strip()] = v
        elif part:
            out[part] = True
    return out


class Func:
    def __init__(self, name, private):
        self.name = name
        self.private = private
        self.args = []  # (name, type, attrs)
        self.results = []
        self.ops = []  # dicts: results, op, operands, attrs, in_types, out_types, callee
        self.ret = None


def parse_module(text):
    funcs = {}
    cur = None
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = Func(m.group(2), bool(m.group(1)))
            funcs[cur.name] = cur
            continue
        if cur is None:
            continue
        m = _ARG.match(line)
        if m:
            cur.args.append((m.group(1), m.group(2), parse_attrs(m.group(3))))
            continue
        m = _RES.match(line)
        if m:
            cur.results = split_types(m.group(1))
            continue
        m = _RET.match(line)
        if m:
            cur.ret = ([v.strip() for v in m.group(1).split(",")], split_types(m.group(2)))
            continue
        m = _OP.match(line)
        if m:
            results = [r.strip() for r in m.group(1).split(",")]
            opname, rest = m.group(2), m.group(3)
            op = {"results": results, "op": opname, "callee": None, "attrs": {}}
            if opname == "func.call":
                cm = re.match(r"^ @(\w+)\((.*?)\) : \((.*)\) -> (.*)$", rest)
                op["callee"] = cm.group(1)
                op["operands"] = [o.strip() for o in cm.group(2).split(",") if o.strip()]
                op["in_types"] = split_types(cm.group(3))
                op["out_types"] = split_types(cm.group(4))
            elif opname == "arith.constant":
                cm = re.match(r"^ dense<(-?\d+)> : (tensor<[^>]*>)$", rest)
                op["operands"], op["in_types"] = [], []
                op["value"] = int(cm.group(1))
                op["out_types"] = [cm.group(2)]
            else:
                cm = re.match(r"^((?: %\w+(?:, %\w+)*)?)(?: \{(.*)\})? : \((.*)\) -> (.*)$", rest)
                assert cm, line
                op["operands"] = [o.strip() for o in cm.group(1).split(",") if o.strip()]
                op["attrs"] = parse_attrs(cm.group(2))
                op["in_types"] = split_types(cm.group(3))
                op["out_types"] = split_types(cm.group(4))
            cur.ops.append(op)
    return funcs


def check_ssa(funcs):
    """Assert SSA well-formedness and type consistency (see module doc)."""
    for f in funcs.values():
        env = {}
        for n, t, _ in f.args:
            assert n not in env, f"@{f.name}: duplicate arg {n}"
            env[n] = t
        for op in f.ops:
            assert len(op["operands"]) == len(op["in_types"]), (f.name, op)
            for v, t in zip(op["operands"], op["in_types"]):
                assert v in env, f"@{f.name}: {v} used before definition in {op['op']}"
                assert env[v] == t, f"@{f.name}: {v} has type {env[v]}, {op['op']} says {t}"
            if op["callee"]:
                callee = funcs[op["callee"]]
                assert [t for _, t, _ in callee.args] == op["in_types"], (f.name, op["callee"])
                assert callee.results == op["out_types"], (f.name, op["callee"])
            assert len(op["results"]) == len(op["out_types"])
            for r, t in zip(op["results"], op["out_types"]):
                assert r not in env, f"@{f.name}: {r} redefined"
                env[r] = t
        assert f.ret is not None, f"@{f.name}: no return"
        vals, types = f.ret
        assert types == f.results, f"@{f.name}: return types {types} != {f.results}"
        for v, t in zip(vals, types):
            assert env[v] == t, f"@{f.name}: returns {v}: {env[v]} as {t}"


def forward_param_count(funcs):
    """Sum of element counts over @forward's tfm.param arguments."""
    n = 0
    for _, t, attrs in funcs["forward"].args:
        if "tfm.param" in attrs:
            n += math.prod(shape_of(t)[0])
    return n
