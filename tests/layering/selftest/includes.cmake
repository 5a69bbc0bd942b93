# Checks cmake/IncludeLayers.cmake itself (run by tests/layering as a
# script): writes a tree under OUT where `low` is below `high`, and `prog`
# is a program above both; -DVIOLATE=<mode> plants one back-up include in
# low/src/low.cpp, which tailcut_forbid_includes on `low` must report with
# its file:line. Modes: namespace (a tailcut/high/ header), program (a
# program's header by name), relative (the same by ../ path), protobuf.
# `low` also has rooms (a library split into checked sub-folders, as
# scheduler/server/ is): net/, and edge/ that uses net/; mode room plants
# an include of net/'s header in low/http/http.cpp, which may not use it.
cmake_minimum_required(VERSION 3.20)
include(${TAILCUT_INCLUDE_LAYERS})
file(REMOVE_RECURSE "${OUT}")
file(WRITE "${OUT}/low/include/tailcut/low/low.h" "#pragma once\nint Low();\n")
file(WRITE "${OUT}/low/src/detail.h" "#pragma once\n")
file(WRITE "${OUT}/high/include/tailcut/high/high.h" "#pragma once\n#include \"tailcut/low/low.h\"\n")
file(WRITE "${OUT}/prog/tool.h" "#pragma once\n#include \"tailcut/high/high.h\"\n")
file(WRITE "${OUT}/prog/main.cpp" "#include \"tool.h\"\n#include <tailcut/low/low.h>\nint main() { return Low(); }\n")
set(planted "")
if(VIOLATE STREQUAL "namespace")
  set(planted "#include \"tailcut/high/high.h\"\n")
elseif(VIOLATE STREQUAL "program")
  set(planted "#include \"tool.h\"\n")
elseif(VIOLATE STREQUAL "relative")
  set(planted "#include \"../../prog/tool.h\"\n")
elseif(VIOLATE STREQUAL "protobuf")
  set(planted "#include \"tailcut.pb.h\"\n")
endif()
file(WRITE "${OUT}/low/src/low.cpp"
     "#include \"tailcut/low/low.h\"\n\n#include \"detail.h\"\n#include \"edge.h\"\n${planted}int Low() { return 0; }\n")
file(WRITE "${OUT}/low/net/net.h" "#pragma once\n")
file(WRITE "${OUT}/low/edge/edge.h" "#pragma once\n#include \"net.h\"\n")
set(room_planted "")
if(VIOLATE STREQUAL "room")
  set(room_planted "#include \"net.h\"\n")
endif()
file(WRITE "${OUT}/low/http/http.cpp" "${room_planted}int Http() { return 0; }\n")
tailcut_forbid_includes(ROOT "${OUT}" FOLDER low/net ALLOW low)
tailcut_forbid_includes(ROOT "${OUT}" FOLDER low/edge ALLOW low USES low/net)
tailcut_forbid_includes(ROOT "${OUT}" FOLDER low/http ALLOW low)
tailcut_forbid_includes(ROOT "${OUT}" FOLDER low EXCEPT net edge http ALLOW low USES low/net low/edge low/http)
tailcut_forbid_includes(ROOT "${OUT}" FOLDER high ALLOW low high)
tailcut_forbid_includes(ROOT "${OUT}" FOLDER prog ALLOW low high)
message(STATUS "include selftest: the tree is clean")
