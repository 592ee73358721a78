# The runtime's op table, generated from the ODS (DESIGN.md §8).
#
# llvm-tblgen dumps the records of RtKernels.td (the tfm and dist ODS plus
# the Rt_KernelAbi records) as JSON; cmake/gen_runtime_op_table.py writes
# them as the plain C++ header OpTable.h. The header is kept in the source
# tree (runtime/include/autoshard/runtime/OpTable.h) because a runtime-only
# build (the GPU box: no MLIR) includes it as it is; this rule refreshes it
# there whenever an ODS file changes, before the runtime or rt-export
# compiles (copy_if_different: an unchanged table rebuilds nothing).

find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(AUTOSHARD_LLVM_TBLGEN llvm-tblgen
             HINTS ${LLVM_TOOLS_BINARY_DIR} REQUIRED NO_DEFAULT_PATH)

set(_td ${PROJECT_SOURCE_DIR}/include/autoshard/Dialect/Rt/IR/RtKernels.td)
set(_json ${CMAKE_BINARY_DIR}/runtime/RtKernels.json)
set(_gen ${CMAKE_BINARY_DIR}/runtime/OpTable.h)
set(_src ${PROJECT_SOURCE_DIR}/runtime/include/autoshard/runtime/OpTable.h)

add_custom_command(
  OUTPUT ${_json}
  COMMAND ${AUTOSHARD_LLVM_TBLGEN} --dump-json
          -I ${PROJECT_SOURCE_DIR}/include -I ${MLIR_INCLUDE_DIRS}
          ${_td} -o ${_json} -d ${_json}.d
  DEPENDS ${_td}
  DEPFILE ${_json}.d
  COMMENT "Dumping the records of RtKernels.td")
add_custom_command(
  OUTPUT ${_gen}
  COMMAND ${Python3_EXECUTABLE}
          ${PROJECT_SOURCE_DIR}/cmake/gen_runtime_op_table.py ${_json} ${_gen}
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_gen} ${_src}
  DEPENDS ${_json} ${PROJECT_SOURCE_DIR}/cmake/gen_runtime_op_table.py
  COMMENT "Generating runtime/include/autoshard/runtime/OpTable.h")
add_custom_target(autoshard-runtime-op-table ALL DEPENDS ${_gen})

# Everything that includes the table compiles after it is refreshed.
foreach(target autoshard_runtime_core obj.AutoshardRtTransforms)
  if(TARGET ${target})
    add_dependencies(${target} autoshard-runtime-op-table)
  endif()
endforeach()
