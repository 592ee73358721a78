"""Finite-difference check of a `tfm-autodiff` block pair.

Usage: vjp_check.py OUT.mlir BLOCK

Interprets (in pure Python, float64) the block function @BLOCK, its @BLOCK_fwd
and @BLOCK_bwd from the pass output, on random inputs: with a random `dy`,
the gradients returned by @BLOCK_bwd must equal the central differences of
`sum(dy * BLOCK(args))`. Only the linear-algebra ops are interpreted (matmul
in all its forms, matmul_wgrad, add/sub/mul with suffix broadcasting, scale,
reduce_sum, broadcast, reshape); the other ops' gradients are `*_grad` ops
whose numerics the runtime's kernels check. Prints one line per argument and
exits non-zero if any gradient is off.
"""

import itertools
import math
import random
import re
import sys


def strides(shape):
    out = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        out[i] = out[i + 1] * shape[i + 1]
    return out


def offset(shape, index):
    return sum(i * s for i, s in zip(index, strides(shape)))


def indices(shape):
    return itertools.product(*[range(d) for d in shape])


def shape_of(type_str):
    dims = re.fullmatch(r"tensor<(.*)>", type_str.strip()).group(1).split("x")
    return tuple(int(d) for d in dims[:-1])


def matmul(a, b, tl, tr):
    (sa, da), (sb, db) = a, b
    batch = sa[:-2]
    m, k = (sa[-1], sa[-2]) if tl else (sa[-2], sa[-1])
    n = sb[-2] if tr else sb[-1]
    out = []
    for bi in indices(batch):
        rb = bi if len(sb) == len(sa) else ()
        for i in range(m):
            for j in range(n):
                out.append(sum(
                    da[offset(sa, bi + ((p, i) if tl else (i, p)))] *
                    db[offset(sb, rb + ((j, p) if tr else (p, j)))]
                    for p in range(k)))
    return batch + (m, n), out


def matmul_wgrad(x, dy):
    (sx, dx), (sd, dd) = x, dy
    k, n, t = sx[-1], sd[-1], math.prod(sx[:-1])
    return (k, n), [sum(dx[r * k + i] * dd[r * n + j] for r in range(t))
                    for i in range(k) for j in range(n)]


def binary(lhs, rhs, fn):
    (sl, dl), (sr, dr) = lhs, rhs
    period = math.prod(sr)
    return sl, [fn(x, dr[i % period]) for i, x in enumerate(dl)]


def drop(index, dims):
    return [v for d, v in enumerate(index) if d not in dims]


def reduce_sum(x, dims):
    shape, data = x
    rshape = tuple(drop(shape, dims))
    out = [0.0] * math.prod(rshape)
    for index, v in zip(indices(shape), data):
        out[offset(rshape, drop(index, dims))] += v
    return rshape, out


def broadcast(x, dims, rshape):
    shape, data = x
    return rshape, [data[offset(shape, drop(i, dims))] for i in indices(rshape)]


OP_RE = re.compile(r"(%\w+) = tfm\.(\w+) (.*?)(?: \{(.*)\})? : "
                   r"\((.*)\) -> (tensor<[^>]*>)$")


def evaluate(op, operands, attrs, result_type):
    tl, tr = "transpose_lhs" in attrs, "transpose_rhs" in attrs
    dims_attr = re.search(r"dims = array<i64:?([^>]*)>", attrs)
    dims = [int(d) for d in re.findall(r"\d+", dims_attr.group(1))] if dims_attr else []
    if op == "matmul":
        return matmul(*operands, tl, tr)
    if op == "matmul_wgrad":
        return matmul_wgrad(*operands)
    if op in ("add", "sub", "mul"):
        fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
              "mul": lambda a, b: a * b}[op]
        return binary(*operands, fn)
    if op == "scale":
        factor = float(re.search(r"factor = ([-+\d.eE]+)", attrs).group(1))
        return operands[0][0], [factor * v for v in operands[0][1]]
    if op == "reduce_sum":
        return reduce_sum(operands[0], dims)
    if op == "broadcast":
        return broadcast(operands[0], dims, shape_of(result_type))
    if op == "reshape":
        return shape_of(result_type), operands[0][1]
    sys.exit(f"vjp_check: op tfm.{op} is not interpreted")


def parse_functions(text):
    funcs = {}
    for m in re.finditer(r"func\.func (?:private )?@(\w+)\((.*?)\) -> .*? \{\n(.*?)\n  \}",
                         text, re.S):
        args = [name for name, _ in re.findall(r"(%arg\d+): (tensor<[^>]*>)", m.group(2))]
        types = [t for _, t in re.findall(r"(%arg\d+): (tensor<[^>]*>)", m.group(2))]
        funcs[m.group(1)] = (args, types, [l.strip() for l in m.group(3).split("\n")])
    return funcs


def run(func, values):
    names, _, lines = func
    env = dict(zip(names, values))
    for line in lines:
        if line.startswith("return"):
            return [env[n] for n in line[len("return "):].split(" : ")[0].split(", ")]
        m = OP_RE.match(line)
        if not m:
            sys.exit(f"vjp_check: cannot parse {line!r}")
        result, op, operands, attrs, _, result_type = m.groups()
        value = evaluate(op, [env[o] for o in operands.split(", ")], attrs or "",
                         result_type)
        assert value[0] == shape_of(result_type), (line, value[0])
        env[result] = value
    sys.exit("vjp_check: no return")


def main():
    text = open(sys.argv[1]).read()
    name = sys.argv[2]
    funcs = parse_functions(text)
    block, fwd, bwd = funcs[name], funcs[name + "_fwd"], funcs[name + "_bwd"]
    rng = random.Random(0)

    def rand(shape):
        return shape, [rng.uniform(-1, 1) for _ in range(math.prod(shape))]

    args = [rand(shape_of(t)) for t in block[1]]
    outputs = run(fwd, args)
    dy = rand(outputs[0][0])
    # @B_bwd(dy, <args of @B it reads>, residuals): which args, from the
    # operands of the calls in @train_step.
    fwd_operands = re.search(rf"call @{name}_fwd\((.*?)\) :", text).group(1).split(", ")
    bwd_operands = re.search(rf"call @{name}_bwd\((.*?)\) :", text).group(1).split(", ")
    read_args = [args[fwd_operands.index(o)] for o in bwd_operands[1:]
                 if o in fwd_operands]
    grads = run(bwd, [dy] + read_args + outputs[1:])

    def objective(values):
        return sum(y * g for y, g in zip(run(block, values)[0][1], dy[1]))

    failed = False
    for i, (arg, grad) in enumerate(zip(args, grads)):
        worst = 0.0
        for j in range(len(arg[1])):
            eps = 1e-3
            bumped = [list(a[1]) for a in args]
            bumped[i][j] += eps
            plus = objective([(a[0], d) for a, d in zip(args, bumped)])
            bumped[i][j] -= 2 * eps
            minus = objective([(a[0], d) for a, d in zip(args, bumped)])
            numeric = (plus - minus) / (2 * eps)
            worst = max(worst, abs(numeric - grad[1][j]) / (1 + abs(numeric)))
        ok = worst < 1e-5
        failed |= not ok
        print(f"arg {i} {'x'.join(map(str, arg[0]))}: {'ok' if ok else 'WRONG'} "
              f"(max relative error {worst:.1e})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
