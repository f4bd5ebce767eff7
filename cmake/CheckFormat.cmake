# cmake -DCLANG_FORMAT=... -DSOURCE_DIR=... -P CheckFormat.cmake
# Fails listing every file clang-format would change.
file(GLOB_RECURSE sources
  ${SOURCE_DIR}/contracts/*.cpp ${SOURCE_DIR}/contracts/*.hpp
  ${SOURCE_DIR}/daemon/*.cpp ${SOURCE_DIR}/daemon/*.hpp
  ${SOURCE_DIR}/probes/*.cpp ${SOURCE_DIR}/probes/*.hpp ${SOURCE_DIR}/probes/*.c
  ${SOURCE_DIR}/cli/*.cpp ${SOURCE_DIR}/cli/*.hpp
  ${SOURCE_DIR}/web/*.cpp ${SOURCE_DIR}/web/*.hpp
  ${SOURCE_DIR}/bench/*.cpp ${SOURCE_DIR}/bench/*.hpp
  ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/tests/*.hpp ${SOURCE_DIR}/tests/*.c)
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
