# cmake -DCLANG_FORMAT=... -DSOURCE_DIR=... -P CheckFormat.cmake
cmake_policy(SET CMP0009 NEW)  # a link in the tree is not followed into what it names
# Fails listing every file clang-format would change.
# Every C and C++ source of the tree, whatever its folder (a folder added
# later is checked without being listed here), but for in-tree builds.
file(GLOB_RECURSE sources ${SOURCE_DIR}/*.cpp ${SOURCE_DIR}/*.hpp ${SOURCE_DIR}/*.c
  ${SOURCE_DIR}/*.h)
list(FILTER sources EXCLUDE REGEX "^${SOURCE_DIR}/(build[^/]*|\\.cache|\\.git)/")
set(unformatted "")
foreach(source IN LISTS sources)
  execute_process(COMMAND ${CLANG_FORMAT} --dry-run --Werror ${source}
                  RESULT_VARIABLE result OUTPUT_QUIET ERROR_QUIET)
  if(NOT result EQUAL 0)
    list(APPEND unformatted ${source})
  endif()
endforeach()
if(unformatted)
  list(JOIN unformatted "\n  " listing)
  message(FATAL_ERROR "Not clang-formatted (run scripts/format):\n  ${listing}")
endif()
list(LENGTH sources count)
message(STATUS "${count} files are clang-formatted")
