# Runs shard-run once and checks its exit code and output (CTest driver).
#
#   cmake -DSHARD_RUN=path -DWORK_DIR=dir [-DARTIFACT=tiny.json]
#         [-DREPLACE_FROM=text -DREPLACE_TO=text]   (edit a copy of ARTIFACT)
#         [-DARTIFACT_TEXT=text]                    (artifact content instead)
#         [-DDATA_TEXT=text | -DDATA_EMPTY=1 | -DDATA=path]  (--data file)
#         [-DARGS=a|b|c] -DEXPECT_RC=n
#         [-DEXPECT_STDERR=regex] [-DEXPECT_STDOUT=regex] [-DEXPECT_FILE=path[,path...]]
#         [-DLAUNCHER_OUTPUT=1]   (a failing multi-rank job: mpirun adds its
#                                  own lines after shard-run's error)
#         -P RunShardRun.cmake
#
# In ARGS, "|" separates arguments; {ARTIFACT} and {DATA} name the files.

cmake_minimum_required(VERSION 3.20)
file(MAKE_DIRECTORY "${WORK_DIR}")
set(artifact "${WORK_DIR}/artifact.json")
if(DEFINED ARTIFACT_TEXT)
  file(WRITE "${artifact}" "${ARTIFACT_TEXT}")
elseif(DEFINED ARTIFACT)
  file(READ "${ARTIFACT}" text)
  if(DEFINED REPLACE_FROM)
    string(FIND "${text}" "${REPLACE_FROM}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "test setup: '${REPLACE_FROM}' is not in ${ARTIFACT}")
    endif()
    string(REPLACE "${REPLACE_FROM}" "${REPLACE_TO}" text "${text}")
  endif()
  file(WRITE "${artifact}" "${text}")
endif()

set(data "${WORK_DIR}/data.txt")
if(DATA_EMPTY)
  file(WRITE "${data}" "")
elseif(DEFINED DATA_TEXT)
  file(WRITE "${data}" "${DATA_TEXT}")
elseif(DEFINED DATA)
  set(data "${DATA}")
endif()

string(REPLACE "{ARTIFACT}" "${artifact}" ARGS "${ARGS}")
string(REPLACE "{DATA}" "${data}" ARGS "${ARGS}")
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${SHARD_RUN}" ${args}
                WORKING_DIRECTORY "${WORK_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 120)
message(STATUS "exit ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit code ${EXPECT_RC}, got ${rc}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}'")
endif()
if(DEFINED EXPECT_STDOUT AND NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}'")
endif()
if(NOT EXPECT_RC STREQUAL "0" AND LAUNCHER_OUTPUT)
  if(NOT err MATCHES "(^|\n)shard-run: error: rank [0-9]+: ")
    message(FATAL_ERROR "expected a 'shard-run: error: rank R: ...' line")
  endif()
elseif(NOT EXPECT_RC STREQUAL "0")
  # One clear line, no crash dump.
  string(REGEX MATCHALL "\n" lines "${err}")
  list(LENGTH lines n)
  if(NOT n EQUAL 1 OR NOT err MATCHES "^shard-run: error: ")
    message(FATAL_ERROR "expected one 'shard-run: error: ...' line on stderr")
  endif()
endif()
if(DEFINED EXPECT_FILE)
  string(REPLACE "," ";" expected_files "${EXPECT_FILE}")
  foreach(f IN LISTS expected_files)
    if(NOT EXISTS "${WORK_DIR}/${f}")
      message(FATAL_ERROR "expected shard-run to write ${f}")
    endif()
  endforeach()
endif()
