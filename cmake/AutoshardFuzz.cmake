# libFuzzer targets (tools/fuzz; built and run by scripts/fuzz.sh, and for
# 60 s each by scripts/test.sh). AUTOSHARD_FUZZ=ON needs clang 16 or later
# with libFuzzer's runtime as the C and C++ compiler (Debian: clang-22 with
# libclang-rt-22-dev). Everything
# built then carries libFuzzer's coverage instrumentation and
# AddressSanitizer, so use a build folder of its own (build-fuzz); only the
# fuzz targets and what they link are meant to be built there.
option(AUTOSHARD_FUZZ
  "Build the libFuzzer targets (clang only; instruments everything with ASan)"
  OFF)
if(AUTOSHARD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "AUTOSHARD_FUZZ=ON needs clang as the C++ compiler "
                        "(found ${CMAKE_CXX_COMPILER_ID}); scripts/fuzz.sh "
                        "picks one")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address)
endif()
