# Warnings, sanitizers and the compiler launcher, applied to every target of ours
# through the envcontract_options interface library.
add_library(envcontract_options INTERFACE)
target_compile_options(envcontract_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                     -Wnon-virtual-dtor -Wold-style-cast)
if(ENVCONTRACT_WERROR)
  target_compile_options(envcontract_options INTERFACE -Werror)
endif()
# Headers live beside their sources and are included as "folder/file.hpp".
target_include_directories(envcontract_options INTERFACE ${PROJECT_SOURCE_DIR})

if(ENVCONTRACT_SANITIZE)
  set(sanitize_flags -fsanitize=address,undefined -fno-omit-frame-pointer
                     -fno-sanitize-recover=undefined)
  target_compile_options(envcontract_options INTERFACE ${sanitize_flags})
  target_link_options(envcontract_options INTERFACE ${sanitize_flags})
endif()

if(ENVCONTRACT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ENVCONTRACT_FUZZ needs clang: -DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_compile_options(envcontract_options INTERFACE ${fuzz_flags})
  target_link_options(envcontract_options INTERFACE -fsanitize=address,undefined)
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
