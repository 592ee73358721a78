#!/usr/bin/env python3
"""Writes the runtime's op table (OpTable.h) from RtKernels.td.

Input: the records of include/autoshard/Dialect/Rt/IR/RtKernels.td as
`llvm-tblgen --dump-json` prints them (the tfm and dist ODS plus the
Rt_KernelAbi records). Output: a plain C++17 header (no MLIR) with one
OpSpec per kernel (autoshard/runtime/OpAbi.h) and one struct of named
operand slots per kernel, e.g. `ops::Matmul::lhs`.

The kernel of an op is its ODS as rt-lower lowers it: tfm ops are named
without the prefix, dist ops with it (`dist.all_reduce`); operands and
results keep their ODS names and order (Optional: 0 or 1, Variadic: any
number, last); attributes keep their names, minus symbol references (the
mesh); an Rt_KernelAbi record replaces or extends that.

    gen_runtime_op_table.py RECORDS.json OUT.h
"""

import json
import sys

CPP_KEYWORDS = {
    "and", "auto", "bool", "break", "case", "char", "class", "const",
    "default", "delete", "do", "double", "else", "enum", "float", "for",
    "if", "int", "long", "new", "not", "operator", "or", "private",
    "public", "register", "return", "short", "signed", "sizeof", "static",
    "struct", "switch", "template", "this", "throw", "try", "union",
    "unsigned", "using", "virtual", "void", "while",
}


class Error(Exception):
    pass


class Records:
    def __init__(self, data):
        self.data = data

    def __getitem__(self, name):
        return self.data[name]

    def derived(self, cls):
        return self.data["!instanceof"].get(cls, [])

    def isa(self, name, cls):
        rec = self.data.get(name)
        return name == cls or (rec is not None and cls in rec["!superclasses"])

    def dag_entries(self, dag):
        """(def name, operand name) of each entry of a dag value."""
        return [(arg["def"], name) for arg, name in dag["args"]]


def attr_kind(records, name):
    """The artifact form of an attribute constraint (docs/artifact-format.md)."""
    rec = records[name]
    base = rec.get("baseAttr")
    if base:  # OptionalAttr / DefaultValuedAttr wrap it
        return attr_kind(records, base["def"])
    storage = (rec.get("storageType") or "").strip()
    if storage == "::mlir::UnitAttr":
        return "Unit"
    if storage == "::mlir::BoolAttr":
        return "Bool"
    if storage == "::mlir::IntegerAttr":
        return "Int"
    if storage == "::mlir::FloatAttr":
        return "Float"
    if storage == "::mlir::StringAttr" or records.isa(name, "EnumAttrInfo") \
            or records.isa(name, "EnumAttr"):
        return "String"  # rt-lower prints enums (reduction kinds) as strings
    if storage in ("::mlir::DenseI64ArrayAttr", "::mlir::DenseI32ArrayAttr"):
        return "IntArray"
    if name == "StrArrayAttr" or records.isa(name, "StrArrayAttr"):
        return "StringArray"
    raise Error(f"attribute constraint '{name}' ({storage}) has no artifact form")


def attr_required(records, name):
    rec = records[name]
    return not rec.get("isOptional") and rec.get("defaultValue") in (None, "")


class Kernel:
    def __init__(self, name, cpp_name, source):
        self.name = name
        self.cpp_name = cpp_name
        self.source = source
        self.args = []  # names
        self.min_args = 0
        self.max_args = 0  # -1: variadic
        self.results = []
        self.min_results = 0
        self.max_results = 0
        self.attrs = []  # (name, kind, required)


def count_operands(records, entries, what, kernel_name, min_variadic):
    """(names, min, max) of operand or result entries; max -1: variadic."""
    names, lo, hi, open_end = [], 0, 0, False
    for def_name, name in entries:
        if open_end:
            raise Error(f"'{kernel_name}': {what} '{name}' follows an optional "
                        "or variadic one; only the last may be")
        names.append(name)
        if records.isa(def_name, "Variadic"):
            lo += min_variadic
            hi = -1
            open_end = True
        elif records.isa(def_name, "Optional"):
            hi += 1
            open_end = True
        else:
            lo += 1
            hi += 1
    return names, lo, hi


def camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.replace(".", "_").split("_"))


def build_kernels(records):
    abis = {}
    for rec_name in records.derived("Rt_KernelAbi"):
        rec = records[rec_name]
        op = rec["op"]["def"]
        if op in abis:
            raise Error(f"two Rt_KernelAbi records for {op}")
        abis[op] = rec
    excluded = {op["def"] for rec in records.derived("Rt_NotKernels")
                for op in records[rec]["ops"]}

    def source_order(op):
        loc = records[op]["!locs"][0]
        path, line = loc.rsplit(":", 1)
        return (0 if "Tfm" in path else 1, int(line), op)

    kernels = []
    for op in sorted(records.derived("Op"), key=source_order):
        rec = records[op]
        dialect = records[rec["opDialect"]["def"]]["name"]
        if dialect not in ("tfm", "dist") or op in excluded:
            continue
        mnemonic = rec["opName"]
        name = mnemonic if dialect == "tfm" else f"dist.{mnemonic}"
        k = Kernel(name, camel(mnemonic) if dialect == "tfm" else "Dist" + camel(mnemonic),
                   f"{dialect}.{mnemonic}")
        abi = abis.pop(op, None)
        ods_args = records.dag_entries(rec["arguments"])
        operands = [e for e in ods_args if not records.isa(e[0], "Attr")]
        attrs = [e for e in ods_args if records.isa(e[0], "Attr")]
        results = records.dag_entries(rec["results"])
        if abi:
            if abi["args"] is not None:
                operands = records.dag_entries(abi["args"])
            if abi["results"] is not None:
                results = records.dag_entries(abi["results"])
        k.args, k.min_args, k.max_args = count_operands(
            records, operands, "argument", name, abi["minVariadicArgs"] if abi else 0)
        k.results, k.min_results, k.max_results = count_operands(
            records, results, "result", name, abi["minVariadicResults"] if abi else 0)
        if abi:
            for def_name, arg in records.dag_entries(abi["optionalArgs"]):
                if k.max_args < 0:
                    raise Error(f"'{name}': an optional argument after a variadic one")
                k.args.append(arg)
                k.max_args += 1
            for def_name, res in records.dag_entries(abi["optionalResults"]):
                if k.max_results < 0:
                    raise Error(f"'{name}': an optional result after a variadic one")
                k.results.append(res)
                k.max_results += 1
            attrs = attrs + records.dag_entries(abi["extraAttrs"])
        for def_name, attr in attrs:
            if records[def_name].get("storageType", "").strip() == "::mlir::FlatSymbolRefAttr":
                continue  # the mesh: the artifact has one
            k.attrs.append((attr, attr_kind(records, def_name),
                            attr_required(records, def_name)))
        seen = set()
        for n in k.args + k.results:
            if n in seen or n in CPP_KEYWORDS or n == "kName":
                raise Error(f"'{name}': operand name '{n}' is repeated or not a "
                            "C++ member name")
            seen.add(n)
        kernels.append(k)
    if abis:
        raise Error(f"Rt_KernelAbi records name no kernel: {sorted(abis)}")
    names = [k.cpp_name for k in kernels]
    if len(set(names)) != len(names):
        raise Error("two kernels have the same C++ name")
    return kernels


def span(array, items):
    return f"{{{array}, {len(items)}}}" if items else "{}"


def render(kernels, source):
    out = []
    w = out.append
    w("//===- OpTable.h - The runtime's kernel ABI (generated) ---------*- C++ -*-===//")
    w("//")
    w(f"// GENERATED from {source}")
    w("// (the tfm and dist ODS) by cmake/gen_runtime_op_table.py; do not edit.")
    w("// The compiler build regenerates it whenever the ODS changes (target")
    w("// autoshard-runtime-op-table); a runtime-only build uses it as it is.")
    w("//")
    w("//===----------------------------------------------------------------------===//")
    w("")
    w("// clang-format off")
    w("")
    w("#ifndef AUTOSHARD_RUNTIME_OPTABLE_H")
    w("#define AUTOSHARD_RUNTIME_OPTABLE_H")
    w("")
    w('#include "autoshard/runtime/OpAbi.h"')
    w("")
    w("namespace autoshard::runtime {")
    w("namespace op_table_detail {")
    for k in kernels:
        if k.args:
            w(f"inline constexpr std::string_view k{k.cpp_name}Args[] = {{"
              + ", ".join(f'"{a}"' for a in k.args) + "};")
        if k.results:
            w(f"inline constexpr std::string_view k{k.cpp_name}Results[] = {{"
              + ", ".join(f'"{r}"' for r in k.results) + "};")
        if k.attrs:
            w(f"inline constexpr AttrSpec k{k.cpp_name}Attrs[] = {{")
            for name, kind, required in k.attrs:
                w(f'    {{"{name}", AttrKind::{kind}, {"true" if required else "false"}}},')
            w("};")
    w("} // namespace op_table_detail")
    w("")
    w("/// Every kernel an artifact may name: the tfm ops in TfmOps.td order,")
    w("/// then the dist ops in DistOps.td order.")
    w("inline constexpr OpSpec kOpTable[] = {")
    for k in kernels:
        d = "op_table_detail::k" + k.cpp_name
        w(f'    {{"{k.name}", {span(d + "Args", k.args)}, {k.min_args}, {k.max_args},')
        w(f'     {span(d + "Results", k.results)}, {k.min_results}, {k.max_results},')
        w(f'     {span(d + "Attrs", k.attrs)}}},')
    w("};")
    w("")
    w("/// The operand slots of each kernel, by ODS name: `sig.arg(ops::Matmul::lhs)`,")
    w("/// `p[ops::Matmul::result]` (a variadic group's slot is its first operand).")
    w("namespace ops {")
    for k in kernels:
        w("")
        w(f"/// `{k.name}` ({k.source}).")
        w(f"struct {k.cpp_name} {{")
        w(f'  static constexpr std::string_view kName = "{k.name}";')
        if k.args:
            w("  static constexpr ArgSlot " + ", ".join(
                f'{a}{{{i}, "{a}"}}' for i, a in enumerate(k.args)) + ";")
        if k.results:
            w("  static constexpr ResultSlot " + ", ".join(
                f'{r}{{{i}, "{r}"}}' for i, r in enumerate(k.results)) + ";")
        w("};")
    w("")
    w("} // namespace ops")
    w("} // namespace autoshard::runtime")
    w("")
    w("#endif // AUTOSHARD_RUNTIME_OPTABLE_H")
    w("")
    w("// clang-format on")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        records = Records(json.load(f))
    try:
        kernels = build_kernels(records)
    except Error as e:
        sys.stderr.write(f"gen_runtime_op_table.py: error: {e}\n")
        return 1
    text = render(kernels, "include/autoshard/Dialect/Rt/IR/RtKernels.td")
    with open(argv[2], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
