# One helper declares a module: its static library, its unit tests, its micro benchmarks and its
# fuzzers, found by file name so that adding a file never means editing a CMakeLists.txt.
#
#   warren_module(<name> DEPS <targets...> [TEST_DEPS <targets...>])
#
# - every *.cc under the module directory except *_test.cc, *_bench.cc, *_fuzz.cc and testing/
#   goes into the static library warren_<name>;
# - testing/*.cc (fakes, fixtures) goes into warren_<name>_testing;
# - all *_test.cc go into one gtest binary warren_<name>_test (ctest label "unit");
# - each *_bench.cc becomes a Google Benchmark binary (ctest label "bench", one quick run);
# - each *_fuzz.cc becomes a libFuzzer binary when WARREN_FUZZ is on (ctest label "fuzz").

set(WARREN_WARNINGS -Wall -Wextra -Werror -Wno-missing-field-initializers)
if(WARREN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

function(warren_module name)
  cmake_parse_arguments(M "" "" "DEPS;TEST_DEPS" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR})
  file(GLOB_RECURSE all_cc CONFIGURE_DEPENDS ${dir}/*.cc)
  set(lib_srcs ${all_cc})
  list(FILTER lib_srcs EXCLUDE REGEX "(_test|_bench|_fuzz)\\.cc$")
  list(FILTER lib_srcs EXCLUDE REGEX "/testing/")
  set(testing_srcs ${all_cc})
  list(FILTER testing_srcs INCLUDE REGEX "/testing/")
  list(FILTER testing_srcs EXCLUDE REGEX "(_test|_bench|_fuzz)\\.cc$")
  set(test_srcs ${all_cc})
  list(FILTER test_srcs INCLUDE REGEX "_test\\.cc$")
  set(bench_srcs ${all_cc})
  list(FILTER bench_srcs INCLUDE REGEX "_bench\\.cc$")
  set(fuzz_srcs ${all_cc})
  list(FILTER fuzz_srcs INCLUDE REGEX "_fuzz\\.cc$")

  set(lib warren_${name})
  if(lib_srcs)
    add_library(${lib} STATIC ${lib_srcs})
    target_include_directories(${lib} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} PUBLIC ${M_DEPS})
    target_compile_options(${lib} PRIVATE ${WARREN_WARNINGS})
  else()
    # Headers only (so far).
    add_library(${lib} INTERFACE)
    target_include_directories(${lib} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${lib} INTERFACE ${M_DEPS})
  endif()
  set_property(GLOBAL APPEND PROPERTY WARREN_MODULE_TARGETS ${lib})

  set(test_link ${lib})
  if(testing_srcs)
    add_library(${lib}_testing STATIC ${testing_srcs})
    target_link_libraries(${lib}_testing PUBLIC ${lib} GTest::gmock)
    target_compile_options(${lib}_testing PRIVATE ${WARREN_WARNINGS})
    list(APPEND test_link ${lib}_testing)
  endif()

  if(test_srcs AND NOT WARREN_FUZZ)
    add_executable(${lib}_test ${test_srcs})
    target_link_libraries(${lib}_test PRIVATE ${test_link} ${M_TEST_DEPS} GTest::gmock_main)
    target_compile_options(${lib}_test PRIVATE ${WARREN_WARNINGS})
    gtest_discover_tests(${lib}_test DISCOVERY_MODE PRE_TEST PROPERTIES LABELS unit)
  endif()

  if(NOT WARREN_FUZZ)
    foreach(src IN LISTS bench_srcs)
      get_filename_component(stem ${src} NAME_WE)
      add_executable(${stem} ${src})
      target_link_libraries(${stem} PRIVATE ${test_link} benchmark::benchmark_main)
      target_compile_options(${stem} PRIVATE ${WARREN_WARNINGS})
      add_test(NAME ${stem} COMMAND ${stem} --benchmark_min_time=0.01)
      set_tests_properties(${stem} PROPERTIES LABELS bench)
    endforeach()
  endif()

  if(WARREN_FUZZ)
    set(WARREN_FUZZ_ARGS -max_total_time=20 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256)
    foreach(src IN LISTS fuzz_srcs)
      get_filename_component(stem ${src} NAME_WE)
      add_executable(${stem} ${src})
      target_link_libraries(${stem} PRIVATE ${lib})
      target_compile_options(${stem} PRIVATE -fsanitize=fuzzer,address,undefined -g)
      target_link_options(${stem} PRIVATE -fsanitize=fuzzer,address,undefined)
      # A short run on every ./test.sh keeps the target alive and catches shallow bugs; longer
      # campaigns run by hand with -max_total_time. A single allocation past 256 MB fails with
      # its stack; ctest's timeout ends a run libFuzzer itself cannot (it has hung after
      # reporting an out-of-memory).
      set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${stem}_corpus)
      file(MAKE_DIRECTORY ${corpus})
      set(seeds ${dir}/testdata/${stem})
      if(EXISTS ${seeds})
        add_test(NAME ${stem} COMMAND ${stem} ${WARREN_FUZZ_ARGS} ${corpus} ${seeds})
      else()
        add_test(NAME ${stem} COMMAND ${stem} ${WARREN_FUZZ_ARGS} ${corpus})
      endif()
      set_tests_properties(${stem} PROPERTIES LABELS fuzz TIMEOUT 120)
      set_property(GLOBAL APPEND PROPERTY WARREN_FUZZ_TARGETS ${stem})
    endforeach()
  endif()
endfunction()

# Whole-program tests (tests/*) and benches (bench/*) link every module declared so far.
function(warren_all_modules out)
  get_property(mods GLOBAL PROPERTY WARREN_MODULE_TARGETS)
  set(${out} ${mods} PARENT_SCOPE)
endfunction()
