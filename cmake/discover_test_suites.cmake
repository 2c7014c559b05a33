# Writes a CTest file with one test per GoogleTest suite of TEST_EXECUTABLE (run after each link
# of the test binary: cmake -D TEST_EXECUTABLE=... -D OUTPUT=... -D TIMEOUT=... -P this file).
#
# Why suites and not single tests (gtest_discover_tests): every start of the test binary costs
# about 1.2 s of CPU before the first test (perf: the dynamic loader's symbol lookups over ~300
# shared libraries, LibTorch's operator registry), so 846 processes spent 846 x 1.2 s, ~1000 s of
# CPU, starting up. A suite's tests share a process, as they do in ci/sanitize.sh's
# two shards; the gtest output names the test that failed.
#
# A suite whose every test was skipped counts as skipped, never as passed: the test binary exits
# with the code in PHASEBENCH_TESTS_ALL_SKIPPED_EXIT then (tests/test_environment.cpp), which is the
# suite's SKIP_RETURN_CODE; a suite with one test that ran and passed counts as passed.
cmake_minimum_required(VERSION 3.22)
foreach(required TEST_EXECUTABLE OUTPUT TIMEOUT)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "discover_test_suites.cmake: -D ${required}=... is required")
  endif()
endforeach()

execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing ERROR_VARIABLE listing_errors RESULT_VARIABLE listing_status
                TIMEOUT 120)
if(NOT listing_status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${listing_status}):\n${listing}${listing_errors}")
endif()

# A suite's line starts in column 0 and ends with its dot, perhaps followed by "  # TypeParam = ...";
# its tests' lines are indented.
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
# Any other line in column 0 but gtest_main's greeting fails the build: a suite this script did
# not understand would otherwise go unrun, unnoticed.
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+)\\.( .*)?$")
    list(APPEND suites "${CMAKE_MATCH_1}")
  elseif(NOT line STREQUAL "" AND NOT line MATCHES "^ " AND NOT line MATCHES "^Running main\\(\\) from ")
    message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests: a line that names no suite: '${line}'")
  endif()
endforeach()
list(LENGTH suites suite_count)
if(suite_count EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests listed no suite:\n${listing}")
endif()

set(all_skipped_exit 77)  # CTest's usual "skipped" code
set(content "# Written by cmake/discover_test_suites.cmake from ${TEST_EXECUTABLE}: ${suite_count} suites.\n")
foreach(suite IN LISTS suites)
  string(APPEND content
    "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${suite}.*]==])\n"
    "set_tests_properties([==[${suite}]==] PROPERTIES TIMEOUT ${TIMEOUT} SKIP_RETURN_CODE ${all_skipped_exit}"
    " ENVIRONMENT PHASEBENCH_TESTS_ALL_SKIPPED_EXIT=${all_skipped_exit})\n")
endforeach()
# Written whole, then renamed: ctest never reads half a file.
file(WRITE "${OUTPUT}.tmp" "${content}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
