"""Minimal MLIR text emitter for ``tfm`` model IR (stdlib only).

Every ``tfm`` op is printed in the dialect's one generic form
(``/work/spec/tfm-ops.md``)::

    %r = tfm.OPNAME %a, %b {attr = value, unitattr} : (type_a, type_b) -> type_r

Attribute values are formatted here: integers as ``4 : i64``, floats as
``1.000000e-05 : f64`` when that spelling is exact and otherwise as the
shortest exact decimal (MLIR float literals need a ``.``), unit attributes
by name only.
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Sequence, Tuple, Union

__all__ = ["TensorType", "Value", "Unit", "UNIT", "fmt_f64", "fmt_i64", "fmt_str",
           "fmt_attr_dict", "FuncBuilder", "INT64_MAX", "Int64OverflowError"]

#: Largest ``i64``: MLIR tensor dims, element counts and integer attributes.
INT64_MAX = 2**63 - 1


class Int64OverflowError(ValueError):
    """A tensor shape, its element count or an ``i64`` attribute does not fit in int64."""


class TensorType:
    """A ranked tensor type; ``shape == ()`` is a scalar (rank-0 tensor)."""

    __slots__ = ("shape", "elt")

    def __init__(self, shape: Sequence[int], elt: str):
        self.shape = tuple(int(d) for d in shape)
        self.elt = elt
        n = math.prod(self.shape)
        if n > INT64_MAX or any(d > INT64_MAX for d in self.shape):
            raise Int64OverflowError(f"{self} has {n} elements, which does not fit in int64")

    @property
    def rank(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        if not self.shape:
            return f"tensor<{self.elt}>"
        return "tensor<" + "x".join(str(d) for d in self.shape) + f"x{self.elt}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorType) and (self.shape, self.elt) == (other.shape, other.elt)

    def __hash__(self) -> int:
        return hash((self.shape, self.elt))

    def __repr__(self) -> str:
        return f"TensorType({self.shape}, {self.elt!r})"


class Value:
    """An SSA value: its printed name (``%x``) and type."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type: TensorType):
        self.name = name
        self.type = type

    def __repr__(self) -> str:
        return f"{self.name}: {self.type}"


class Unit:
    """Marker for a unit attribute (present = true)."""


UNIT = Unit()

AttrValue = Union[str, Unit]


def fmt_f64(x: float) -> str:
    """Format ``x`` as an exact MLIR ``f64`` float attribute."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite float attribute {x!r}")
    s = "%.6e" % x
    if float(s) != x:
        s = repr(x)
        if "." not in s:  # '1e-07' -> '1.0e-07' (MLIR float literals need a '.')
            mant, _, exp = s.partition("e")
            s = mant + ".0" + ("e" + exp if exp else "")
    return s + " : f64"


def fmt_i64(x: int) -> str:
    """Format ``x`` as an MLIR ``i64`` integer attribute."""
    x = int(x)
    if not -INT64_MAX - 1 <= x <= INT64_MAX:
        raise Int64OverflowError(f"{x} does not fit in an i64 attribute")
    return f"{x} : i64"


def fmt_str(s: str) -> str:
    """Format ``s`` as an MLIR string attribute."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fmt_attr_dict(attrs: Dict[str, AttrValue]) -> str:
    """``{a = 1 : i64, flag}`` (empty string for no attributes)."""
    if not attrs:
        return ""
    parts = [k if isinstance(v, Unit) else f"{k} = {v}" for k, v in attrs.items()]
    return "{" + ", ".join(parts) + "}"


def _types(ts: Sequence[TensorType]) -> str:
    return ", ".join(str(t) for t in ts)


def _fn_results(ts: Sequence[TensorType]) -> str:
    if len(ts) == 1:
        return str(ts[0])
    return "(" + _types(ts) + ")"


_NAME_RE = re.compile(r"[^A-Za-z0-9_]")


class FuncBuilder:
    """Builds one ``func.func`` as text.

    Args:
        name: symbol name without ``@``.
        private: emit ``func.func private``.
    """

    def __init__(self, name: str, private: bool = False):
        self.name = name
        self.private = private
        self.args: List[Tuple[Value, Dict[str, AttrValue]]] = []
        self.body: List[str] = []
        self.results: List[Value] = []
        self._used: Dict[str, int] = {}

    def _fresh(self, hint: str) -> str:
        hint = _NAME_RE.sub("_", hint) or "v"
        if hint[0].isdigit():
            hint = "v" + hint
        n = self._used.get(hint)
        if n is None:
            self._used[hint] = 1
            return "%" + hint
        # find the next free suffix
        while True:
            cand = f"{hint}_{n}"
            n += 1
            if cand not in self._used:
                self._used[hint] = n
                self._used[cand] = 1
                return "%" + cand

    def _results(self, types: Sequence[TensorType], hint: Union[str, Sequence[str]]) -> List[Value]:
        hints = [hint] if isinstance(hint, str) else list(hint)
        while len(hints) < len(types):
            hints.append(f"{hints[0]}_r{len(hints)}")
        return [Value(self._fresh(h), t) for h, t in zip(hints, types)]

    def arg(self, hint: str, type: TensorType, attrs: Optional[Dict[str, AttrValue]] = None) -> Value:
        """Add a function argument with optional argument attributes."""
        v = Value(self._fresh(hint), type)
        self.args.append((v, dict(attrs or {})))
        return v

    def op(self, opname: str, operands: Sequence[Value], result_types: Sequence[TensorType],
           attrs: Optional[Dict[str, AttrValue]] = None,
           hint: Union[str, Sequence[str]] = "v") -> List[Value]:
        """Emit ``opname`` in generic tfm form; returns its results.

        ``hint`` names the results (one string: first result; a sequence: one
        per result)."""
        results = self._results(result_types, hint)
        lhs = ", ".join(r.name for r in results)
        ops = ", ".join(o.name for o in operands)
        ad = fmt_attr_dict(attrs or {})
        text = f"{lhs} = {opname}"
        if ops:
            text += " " + ops
        if ad:
            text += " " + ad
        text += f" : ({_types([o.type for o in operands])}) -> {_fn_results(result_types)}"
        self.body.append(text)
        return results

    def op1(self, opname: str, operands: Sequence[Value], result_type: TensorType,
            attrs: Optional[Dict[str, AttrValue]] = None, hint: str = "v") -> Value:
        """Emit a single-result op."""
        return self.op(opname, operands, [result_type], attrs, hint)[0]

    def constant_i64(self, value: int, hint: str = "c") -> Value:
        """``arith.constant dense<value> : tensor<i64>``."""
        v = Value(self._fresh(hint), TensorType((), "i64"))
        self.body.append(f"{v.name} = arith.constant dense<{int(value)}> : tensor<i64>")
        return v

    def call(self, callee: str, operands: Sequence[Value], result_types: Sequence[TensorType],
             hint: Union[str, Sequence[str]] = "v") -> List[Value]:
        """``func.call @callee(...)``."""
        results = self._results(result_types, hint)
        lhs = ", ".join(r.name for r in results)
        ops = ", ".join(o.name for o in operands)
        self.body.append(f"{lhs} = func.call @{callee}({ops}) : "
                         f"({_types([o.type for o in operands])}) -> {_fn_results(result_types)}")
        return results

    def ret(self, values: Sequence[Value]) -> None:
        """Set the function's results (emits ``return``)."""
        self.results = list(values)

    def result_types(self) -> List[TensorType]:
        return [v.type for v in self.results]

    def render(self, indent: str = "  ") -> str:
        """The function as MLIR text."""
        args = []
        for v, attrs in self.args:
            ad = fmt_attr_dict(attrs)
            args.append(f"{v.name}: {v.type}" + (f" {ad}" if ad else ""))
        vis = "private " if self.private else ""
        sep = ",\n" + indent + "    "
        head = (f"{indent}func.func {vis}@{self.name}(\n{indent}    " + sep.join(args)
                + f")\n{indent}    -> {_fn_results(self.result_types())} {{")
        lines = [head]
        for b in self.body:
            lines.append(indent * 2 + b)
        rets = ", ".join(v.name for v in self.results)
        lines.append(indent * 2 + f"return {rets} : {_types(self.result_types())}")
        lines.append(indent + "}")
        return "\n".join(lines)
