# Generated C++ of a dialect's attributes and op interfaces.

# autoshard_add_dialect_attrs_and_interfaces(<name> <dialect>)
#
# From `<name>Attrs.td` in the current source directory: the attribute
# definitions of dialect <dialect> (`<name>Attrs.{h,cpp}.inc`) and its enums
# (`<name>Enums.{h,cpp}.inc`), target `Autoshard<name>AttrsIncGen`; from
# `<name>Interfaces.td`: its op interfaces (`<name>Interfaces.{h,cpp}.inc`),
# target `Autoshard<name>OpInterfacesIncGen`. Both are generated before the
# dialect's ops (`MLIR<name>OpsIncGen`, from add_mlir_dialect), which use them.
function(autoshard_add_dialect_attrs_and_interfaces name dialect)
  set(LLVM_TARGET_DEFINITIONS ${name}Attrs.td)
  mlir_tablegen(${name}Attrs.h.inc -gen-attrdef-decls
                -attrdefs-dialect=${dialect})
  mlir_tablegen(${name}Attrs.cpp.inc -gen-attrdef-defs
                -attrdefs-dialect=${dialect})
  mlir_tablegen(${name}Enums.h.inc -gen-enum-decls)
  mlir_tablegen(${name}Enums.cpp.inc -gen-enum-defs)
  add_public_tablegen_target(Autoshard${name}AttrsIncGen)
  add_dependencies(MLIR${name}OpsIncGen Autoshard${name}AttrsIncGen)

  set(LLVM_TARGET_DEFINITIONS ${name}Interfaces.td)
  mlir_tablegen(${name}Interfaces.h.inc -gen-op-interface-decls)
  mlir_tablegen(${name}Interfaces.cpp.inc -gen-op-interface-defs)
  add_public_tablegen_target(Autoshard${name}OpInterfacesIncGen)
  add_dependencies(MLIR${name}OpsIncGen Autoshard${name}OpInterfacesIncGen)
endfunction()
