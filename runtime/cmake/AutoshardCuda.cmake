# Detects the CUDA toolkit and nvcc, enables the CUDA language and adds the
# CUDA backend (runtime/lib/cuda). Included from runtime/CMakeLists.txt when
# AUTOSHARD_ENABLE_CUDA is AUTO or ON. No GPU is needed to build: the
# backend compiles for sm_90a (Hopper, H100/H200) plus compute_90 PTX, which
# the driver JIT-compiles for later GPUs.

# nvcc is often not on PATH (e.g. the lent GPU machine); try the usual place.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(AUTOSHARD_NVCC nvcc
               HINTS ENV CUDA_HOME ENV CUDA_PATH
               PATHS /usr/local/cuda/bin /opt/cuda/bin
               PATH_SUFFIXES bin)
  if(AUTOSHARD_NVCC)
    set(CMAKE_CUDA_COMPILER ${AUTOSHARD_NVCC})
  endif()
endif()

include(CheckLanguage)
check_language(CUDA) # Runs nvcc on a test file: fails cleanly if it cannot.
set(_autoshard_cuda_ok OFF)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90a-real 90-virtual)
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(_autoshard_cuda_ok ON)
  endif()
endif()

if(NOT _autoshard_cuda_ok)
  if(AUTOSHARD_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "AUTOSHARD_ENABLE_CUDA=ON, but no working nvcc and "
                        "CUDA toolkit were found (set CUDACXX or CUDA_HOME)")
  endif()
  message(STATUS "autoshard runtime: CUDA toolkit not found; the CUDA "
                 "backend is skipped")
  return()
endif()

# NCCL: shipped inside the toolkit tree here, or installed separately.
find_path(AUTOSHARD_NCCL_INCLUDE_DIR nccl.h
          HINTS ENV NCCL_HOME ${CUDAToolkit_INCLUDE_DIRS}
          PATH_SUFFIXES include)
find_library(AUTOSHARD_NCCL_LIBRARY nccl
             HINTS ENV NCCL_HOME ${CUDAToolkit_LIBRARY_DIR}
             PATH_SUFFIXES lib lib64)
set(AUTOSHARD_HAVE_NCCL OFF)
if(AUTOSHARD_NCCL_INCLUDE_DIR AND AUTOSHARD_NCCL_LIBRARY)
  set(AUTOSHARD_HAVE_NCCL ON)
endif()

set(AUTOSHARD_HAVE_CUDA ON)
message(STATUS "autoshard runtime: CUDA backend enabled (CUDA "
               "${CUDAToolkit_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}, "
               "NCCL ${AUTOSHARD_HAVE_NCCL})")
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../lib/cuda
                 ${CMAKE_CURRENT_BINARY_DIR}/lib/cuda)

# The GPU step benchmark of scripts/gpu_check.sh.
if(EXISTS ${PROJECT_SOURCE_DIR}/bench/gpu/CMakeLists.txt)
  add_subdirectory(${PROJECT_SOURCE_DIR}/bench/gpu
                   ${CMAKE_BINARY_DIR}/bench/gpu)
endif()
