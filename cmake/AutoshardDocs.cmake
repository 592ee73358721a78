# Dialect documentation generated from ODS.
#
# Upstream `add_mlir_doc` passes `-allow-hugo-specific-features`, which makes
# mlir-tblgen wrap descriptions in Hugo shortcodes (`{{% markdown %}}`) that
# show up literally in plain Markdown viewers. This is the same rule without
# that flag.

# autoshard_add_dialect_doc(<td_name> <dialect>)
#
# Generates `<td_name>.md` (`-gen-dialect-doc -dialect=<dialect>`) from
# `<td_name>.td` in the current source directory, copies it to
# ${CMAKE_BINARY_DIR}/docs/Dialects/<td_name>.md and makes `mlir-doc` (and so
# `autoshard-doc`) depend on it, through the target `<td_name>DocGen`.
function(autoshard_add_dialect_doc td_name dialect)
  set(LLVM_TARGET_DEFINITIONS ${td_name}.td)
  tablegen(MLIR ${td_name}.md -gen-dialect-doc -dialect=${dialect})
  set(gen_doc_file ${CMAKE_BINARY_DIR}/docs/Dialects/${td_name}.md)
  add_custom_command(
    OUTPUT ${gen_doc_file}
    COMMAND ${CMAKE_COMMAND} -E copy
            ${CMAKE_CURRENT_BINARY_DIR}/${td_name}.md ${gen_doc_file}
    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${td_name}.md)
  add_custom_target(${td_name}DocGen DEPENDS ${gen_doc_file})
  set_target_properties(${td_name}DocGen PROPERTIES FOLDER "Autoshard/Docs")
  add_dependencies(mlir-doc ${td_name}DocGen)
endfunction()
