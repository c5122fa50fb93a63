# The layering rule of ARCHITECTURE.md, checked on the sources themselves: app -> ui -> engine/api.
#   1. A file under ui/ or app/gui/ includes nothing under engine/ but engine/api/ headers, so what
#      the desktop application uses of the engine is the API and nothing else.
#   2. No file under engine/ includes a Qt header, so cluster nodes and the GPU machine build it alone.
# Run as `cmake -DROOT=<source dir> -P check_includes.cmake`; every offending line is printed and the
# script fails.
if(NOT ROOT)
  message(FATAL_ERROR "check_includes.cmake: pass -DROOT=<the source directory>")
endif()

set(problems "")

file(GLOB_RECURSE gui_sources ${ROOT}/ui/*.cpp ${ROOT}/ui/*.h ${ROOT}/app/gui/*.cpp ${ROOT}/app/gui/*.h)
foreach(f ${gui_sources})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]engine/")
  foreach(line ${lines})
    if(NOT line MATCHES "[\"<]engine/api/")
      file(RELATIVE_PATH rel ${ROOT} ${f})
      string(STRIP "${line}" line)
      list(APPEND problems "${rel}: ${line}: the UI may include only engine/api/ headers")
    endif()
  endforeach()
endforeach()

file(GLOB_RECURSE engine_sources ${ROOT}/engine/*.cpp ${ROOT}/engine/*.h ${ROOT}/engine/*.cu ${ROOT}/engine/*.cuh)
foreach(f ${engine_sources})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]Q[A-Za-z]*[\">/]")
  foreach(line ${lines})
    file(RELATIVE_PATH rel ${ROOT} ${f})
    string(STRIP "${line}" line)
    list(APPEND problems "${rel}: ${line}: the engine may not include Qt")
  endforeach()
endforeach()

list(LENGTH gui_sources n_gui)
list(LENGTH engine_sources n_engine)
if(problems)
  list(JOIN problems "\n" text)
  message(FATAL_ERROR "layering broken:\n${text}")
endif()
message(STATUS "layering: ${n_gui} UI files include only engine/api/, ${n_engine} engine files include no Qt")
