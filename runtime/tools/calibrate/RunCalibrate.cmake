# Runs shard-calibrate once and checks that it ends with the expected exit
# code (a clean exit, not a signal) and error message (CTest driver).
#
#   cmake -DTOOL=path -DWORK_DIR=dir [-DARGS=a|b|c] [-DBASE_TEXT=json]
#         -DEXPECT_RC=n -DEXPECT_STDERR=regex -P RunCalibrate.cmake
#
# In ARGS, "|" separates arguments, {OUT} names WORK_DIR/cluster.json,
# which a failing run must not have written, and {BASE} WORK_DIR/base.json,
# holding BASE_TEXT.

cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(out "${WORK_DIR}/cluster.json")
set(base "${WORK_DIR}/base.json")
if(DEFINED BASE_TEXT)
  file(WRITE "${base}" "${BASE_TEXT}")
endif()
string(REPLACE "{OUT}" "${out}" args "${ARGS}")
string(REPLACE "{BASE}" "${base}" args "${args}")
string(REPLACE "|" ";" args "${args}")
execute_process(COMMAND "${TOOL}" ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr
                TIMEOUT 120)
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit status '${rc}', expected ${EXPECT_RC}\n"
                      "stdout:\n${stdout}\nstderr:\n${stderr}")
endif()
if(NOT stderr MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}':\n${stderr}")
endif()
if(NOT EXPECT_RC EQUAL 0 AND EXISTS "${out}")
  message(FATAL_ERROR "a failing run wrote ${out}")
endif()
