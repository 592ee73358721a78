# Every file shard-run writes replaces its target atomically (issue 19 item
# 4, AtomicFile.h): nothing is created at start-up, and a run killed (or
# failing) while it writes --save-params, --trace or the --log's records
# leaves the target as it was.
#
#   cmake -DSHARD_RUN=path -DWORK_DIR=dir -DARTIFACT=tiny.json -DDATA=tiny.txt
#         -P AtomicWrites.cmake

cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(common "${ARTIFACT}" --data "${DATA}" --steps 3 --eval-interval 0
           --eval-iters 1 --sample 0)

# run(NAME RC [ENV e] [ARGS ...]) runs shard-run, checks its exit code
# (a regex: CMake reports SIGKILL as "Subprocess killed"), keeps
# stderr in NAME_err.
function(run name want_rc)
  cmake_parse_arguments(R "" "ENV" "ARGS" ${ARGN})
  if(DEFINED R_ENV)
    string(REGEX REPLACE "=.*" "" var "${R_ENV}")
    string(REGEX REPLACE "^[^=]*=" "" value "${R_ENV}")
    set(ENV{${var}} "${value}")
  endif()
  execute_process(COMMAND "${SHARD_RUN}" ${common} ${R_ARGS}
                  WORKING_DIRECTORY "${WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 120)
  if(DEFINED R_ENV)
    unset(ENV{${var}})
  endif()
  message(STATUS "${name}: exit ${rc}\n${err}")
  if(NOT rc MATCHES "${want_rc}")
    message(FATAL_ERROR "${name}: expected exit ${want_rc}, got ${rc}\n${out}")
  endif()
  set(${name}_err "${err}" PARENT_SCOPE)
endfunction()

function(expect_unchanged file hash)
  file(SHA256 "${WORK_DIR}/${file}" now)
  if(NOT now STREQUAL "${hash}")
    message(FATAL_ERROR "${file} changed: a failed write reached the target")
  endif()
endfunction()

# 1. Nothing is created at start-up: a run that fails before training
#    (its data file is missing) leaves no file at any output path.
run(early 1 ARGS --save-params p.safetensors --trace t.json --log log.jsonl
    --data "${WORK_DIR}/missing.txt")
foreach(f p.safetensors t.json log.jsonl)
  if(EXISTS "${WORK_DIR}/${f}")
    message(FATAL_ERROR "${f} was created by a run that wrote nothing")
  endif()
endforeach()

# 2. A good run writes all three.
run(good 0 ARGS --save-params p.safetensors --trace t.json --log log.jsonl)
foreach(f p.safetensors t.json log.jsonl)
  file(SHA256 "${WORK_DIR}/${f}" hash_${f})
  file(SIZE "${WORK_DIR}/${f}" size)
  if(size EQUAL 0)
    message(FATAL_ERROR "${f} is empty")
  endif()
endforeach()

# 3. Killed halfway through each write (SIGKILL, so no cleanup runs): the
#    target keeps the good run's bytes (one output per run, so that no
#    other write of the run replaces it first).
set(flag_p.safetensors --save-params)
set(flag_t.json --trace)
set(flag_log.jsonl --log)
foreach(f p.safetensors t.json log.jsonl)
  run(kill_${f} "^(Subprocess killed|Killed)$"
      ENV "AUTOSHARD_TEST_WRITE_FAULT=kill:${f}"
      ARGS ${flag_${f}} ${f} --seed 7)
  expect_unchanged(${f} "${hash_${f}}")
  file(GLOB left "${WORK_DIR}/${f}.tmp-*")
  if(NOT left)
    message(FATAL_ERROR "kill_${f}: no temporary: the hook did not fire")
  endif()
endforeach()

# 4. The log's final record killed: every step's line is there, whole, but
#    no final record (the 2nd atomic write of the log is the final one).
run(kill_final "^(Subprocess killed|Killed)$" ENV "AUTOSHARD_TEST_WRITE_FAULT=kill:log.jsonl:2"
    ARGS --log log.jsonl --seed 7)
file(READ "${WORK_DIR}/log.jsonl" log)
if(NOT log MATCHES "^{[^\n]*\"step\":0,[^\n]*}\n{[^\n]*\"step\":1,[^\n]*}\n{[^\n]*\"step\":2,[^\n]*}\n$"
   OR log MATCHES "\"final\"")
  message(FATAL_ERROR "log.jsonl after a kill in its final write:\n${log}")
endif()

# 5. A failing write (as on a full disk): a clear error, the target
#    unchanged, and the temporary removed.
file(GLOB leftovers "${WORK_DIR}/*.tmp-*")
if(leftovers)
  file(REMOVE ${leftovers}) # what the killed runs left
endif()
run(fail 1 ENV "AUTOSHARD_TEST_WRITE_FAULT=fail:p.safetensors"
    ARGS --save-params p.safetensors --seed 7)
if(NOT fail_err MATCHES "^shard-run: error: --save-params: writing 'p.safetensors.tmp-[0-9]+': test hook AUTOSHARD_TEST_WRITE_FAULT stopped the write halfway \\('p.safetensors' is unchanged\\)\n$")
  message(FATAL_ERROR "unexpected message for a failed write")
endif()
expect_unchanged(p.safetensors "${hash_p.safetensors}")
file(GLOB leftovers "${WORK_DIR}/*.tmp-*")
if(leftovers)
  message(FATAL_ERROR "a failed write left ${leftovers}")
endif()

# 6. Without a fault the next run replaces each file whole.
run(replace 0 ARGS --save-params p.safetensors --trace t.json --log log.jsonl
    --seed 7)
file(SHA256 "${WORK_DIR}/p.safetensors" now)
if(now STREQUAL "${hash_p.safetensors}")
  message(FATAL_ERROR "--seed 7 wrote the same parameters as --seed 1337")
endif()
