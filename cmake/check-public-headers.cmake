# cmake -DINCLUDE_DIR=<dir> -P check-public-headers.cmake
# Fails when a header under INCLUDE_DIR includes a Volley header that is not
# itself under INCLUDE_DIR (a private header from src/, which is not
# installed), or uses a quoted include (which can reach beside the file).
file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/*.hpp)
set(problems "")
foreach(header IN LISTS headers)
  file(STRINGS ${INCLUDE_DIR}/${header} lines REGEX "^[ \t]*#[ \t]*include")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
      list(APPEND problems "${header}: quoted include \"${CMAKE_MATCH_1}\" (public headers use <volley/...>)")
    elseif(line MATCHES "#[ \t]*include[ \t]*<(volley/[^>]+)>")
      if(NOT EXISTS ${INCLUDE_DIR}/${CMAKE_MATCH_1})
        list(APPEND problems "${header}: includes <${CMAKE_MATCH_1}>, which is not a public header")
      endif()
    endif()
  endforeach()
endforeach()
list(LENGTH headers count)
if(problems)
  list(JOIN problems "\n  " text)
  message(FATAL_ERROR "public headers include private ones:\n  ${text}")
endif()
message(STATUS "${count} public headers include only public headers")
