# Include checks: the layering of docs/ARCHITECTURE.md ("Layers") over the
# sources themselves, beside cmake/LinkGraph.cmake's link-graph check. A
# link edge can be missing while a header still reaches up (a header-only
# use of a higher layer), so the includes are checked too.
#
# tailcut_forbid_includes(ROOT <dir> FOLDER <folder> ALLOW ns... [USES folder...]
#                         [EXCEPT subfolder...] [PROTOBUF] [RESULT var])
#   Scans every C++/CUDA file under ROOT/FOLDER (but not under
#   FOLDER/<subfolder> for each EXCEPT) and fails, naming each offending
#   file:line, when one includes
#   - "tailcut/<ns>/..." (or <tailcut/<ns>/...>) for an <ns> not in ALLOW;
#   - "tailcut.pb.h" (the generated protocol) without PROTOBUF;
#   - any other quoted header that is not inside FOLDER (looked up beside
#     the including file, then in FOLDER/src and FOLDER/include) or directly
#     in one of the USES folders (ROOT-relative: the rooms of a library it
#     may use, e.g. the server's net/ for its edge/): a library reaching
#     into a program's, another library's or another room's private headers.
#   Reports every offender at once; with RESULT the lines are appended to
#   <var> instead, for the caller to report.
#
# tailcut_check_include_layers(<source root>) applies the project's rules.
# The top-level CMakeLists.txt calls it on every configure; the ctest
# layering_includes runs this file as a script (cmake -DTAILCUT_SOURCE_DIR=
# ... -P cmake/IncludeLayers.cmake), so an include added after the last
# configure is caught by the test run too. tests/layering checks the checker.
include_guard(GLOBAL)
cmake_policy(VERSION 3.20)  # IN_LIST etc. when run as a script (-P)

# 1-based line of the first line of `file` that is exactly `text`.
function(_tailcut_line_of file text out)
  file(READ "${file}" content)
  string(FIND "${content}" "${text}" pos)
  set(line 0)
  if(pos GREATER_EQUAL 0)
    string(SUBSTRING "${content}" 0 ${pos} before)
    string(REGEX MATCHALL "\n" newlines "${before}")
    list(LENGTH newlines n)
    math(EXPR line "${n} + 1")
  endif()
  set(${out} ${line} PARENT_SCOPE)
endfunction()

function(tailcut_forbid_includes)
  cmake_parse_arguments(F "PROTOBUF" "ROOT;FOLDER;RESULT" "ALLOW;USES;EXCEPT" ${ARGN})
  set(base "${F_ROOT}/${F_FOLDER}")
  if(NOT IS_DIRECTORY "${base}")
    message(FATAL_ERROR "tailcut_forbid_includes: no folder ${base}")
  endif()
  file(GLOB_RECURSE files LIST_DIRECTORIES false
       "${base}/*.h" "${base}/*.hpp" "${base}/*.cpp" "${base}/*.cc" "${base}/*.cu" "${base}/*.cuh")
  list(JOIN F_ALLOW ", " allowed)
  get_filename_component(real_base "${base}" REALPATH)
  set(uses "")
  foreach(u IN LISTS F_USES)
    if(NOT IS_DIRECTORY "${F_ROOT}/${u}")
      message(FATAL_ERROR "tailcut_forbid_includes: no folder ${F_ROOT}/${u} (USES of ${F_FOLDER})")
    endif()
    get_filename_component(real_u "${F_ROOT}/${u}" REALPATH)
    list(APPEND uses "${real_u}")
  endforeach()
  set(_offenders "")
  foreach(f IN LISTS files)
    set(skip FALSE)
    foreach(x IN LISTS F_EXCEPT)
      string(FIND "${f}" "${base}/${x}/" at)
      if(at EQUAL 0)
        set(skip TRUE)
      endif()
    endforeach()
    if(skip)
      continue()
    endif()
    file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    get_filename_component(dir "${f}" DIRECTORY)
    foreach(l IN LISTS lines)
      set(why "")
      if(l MATCHES "^[ \t]*#[ \t]*include[ \t]*[<\"]tailcut/([^/>\"]+)/")
        if(NOT CMAKE_MATCH_1 IN_LIST F_ALLOW)
          set(why "tailcut/${CMAKE_MATCH_1}/ is above ${F_FOLDER} (it may include tailcut/{${allowed}}/)")
        endif()
      elseif(l MATCHES "^[ \t]*#[ \t]*include[ \t]*\"tailcut\\.pb\\.h\"")
        if(NOT F_PROTOBUF)
          set(why "the protocol (wire) is not for ${F_FOLDER}")
        endif()
      elseif(l MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
        set(inc "${CMAKE_MATCH_1}")
        set(found "")
        foreach(d "${dir}" "${base}/src" "${base}/include" ${uses})
          if(EXISTS "${d}/${inc}" AND NOT IS_DIRECTORY "${d}/${inc}")
            get_filename_component(found "${d}/${inc}" REALPATH)
            break()
          endif()
        endforeach()
        if(NOT found)
          set(why "not a header of ${F_FOLDER} (another folder's private header, or a program's)")
        else()
          # Inside FOLDER, outside its EXCEPT subfolders, or directly in a USES folder.
          string(FIND "${found}" "${real_base}/" at)
          set(ok FALSE)
          if(at EQUAL 0)
            set(ok TRUE)
            foreach(x IN LISTS F_EXCEPT)
              string(FIND "${found}" "${real_base}/${x}/" in_x)
              if(in_x EQUAL 0)
                set(ok FALSE)
              endif()
            endforeach()
          endif()
          get_filename_component(found_dir "${found}" DIRECTORY)
          if(found_dir IN_LIST uses)
            set(ok TRUE)
          endif()
          if(NOT ok)
            file(RELATIVE_PATH rel "${F_ROOT}" "${found}")
            set(why "${rel} is outside ${F_FOLDER}")
          endif()
        endif()
      endif()
      if(why)
        _tailcut_line_of("${f}" "${l}" line)
        file(RELATIVE_PATH rel "${F_ROOT}" "${f}")
        string(STRIP "${l}" stripped)
        list(APPEND _offenders "  ${rel}:${line}: ${stripped}: ${why}")
      endif()
    endforeach()
  endforeach()
  if(F_RESULT)
    set(${F_RESULT} ${${F_RESULT}} ${_offenders} PARENT_SCOPE)
  elseif(_offenders)
    _tailcut_report_includes("${_offenders}")
  endif()
endfunction()

function(_tailcut_report_includes bad)
  list(JOIN bad "\n" text)
  message(FATAL_ERROR "layering: an include reaches a layer above its folder (docs/ARCHITECTURE.md, \"Layers\"):\n"
                      "${text}")
endfunction()

# Each folder may include its own headers and those of the layers below it
# (docs/ARCHITECTURE.md, "Layers"); programs/ and tests/ may include any
# library, and no library may include from them.
function(tailcut_check_include_layers root)
  set(r ROOT "${root}" RESULT bad)
  set(bad "")
  tailcut_forbid_includes(${r} FOLDER common ALLOW common)
  tailcut_forbid_includes(${r} FOLDER wire ALLOW common wire PROTOBUF)
  tailcut_forbid_includes(${r} FOLDER predictors ALLOW common predictors)
  tailcut_forbid_includes(${r} FOLDER coding ALLOW common coding)
  tailcut_forbid_includes(${r} FOLDER scheduler/core ALLOW common predictors core)
  # The server's rooms (scheduler/server/CMakeLists.txt): each sees the
  # core and its own headers; only edge/ uses net/, and only the server
  # itself (src/) joins them all; replicas/ uses durability/. tailcut/server/ is the public include/.
  set(srv scheduler/server)
  tailcut_forbid_includes(${r} FOLDER ${srv}/net ALLOW common predictors core wire PROTOBUF)
  tailcut_forbid_includes(${r} FOLDER ${srv}/durability ALLOW common predictors core server PROTOBUF)
  tailcut_forbid_includes(${r} FOLDER ${srv}/http ALLOW common predictors core)
  tailcut_forbid_includes(${r} FOLDER ${srv}/edge ALLOW common predictors core server wire PROTOBUF USES ${srv}/net)
  # replicas/ (Raft) applies group commits to a journal: it uses durability/.
  tailcut_forbid_includes(${r} FOLDER ${srv}/replicas ALLOW common predictors core server USES ${srv}/durability)
  tailcut_forbid_includes(${r} FOLDER ${srv} EXCEPT net durability http edge replicas
                          ALLOW common predictors core server wire PROTOBUF
                          USES ${srv}/net ${srv}/durability ${srv}/http ${srv}/edge ${srv}/replicas)
  # plugin_api: the external plugin API (tailcut/plugins/plugin_api.h) and
  # its loader, on the core alone.
  tailcut_forbid_includes(${r} FOLDER plugin_api ALLOW common predictors core plugins)
  # policies: include/tailcut/plugins/ holds forwarding headers for the old
  # paths (issue 40), hence tailcut/plugins/ too.
  tailcut_forbid_includes(${r} FOLDER policies ALLOW common predictors coding core policies plugins)
  tailcut_forbid_includes(${r} FOLDER executor ALLOW common wire coding executor cuda PROTOBUF)
  # The client library is wire-based; local_cluster.h (same folder) runs an
  # in-process server, hence core and server.
  tailcut_forbid_includes(${r} FOLDER client ALLOW common wire client core server PROTOBUF)
  tailcut_forbid_includes(${r} FOLDER sim ALLOW common predictors coding core policies plugins sim)
  # Each program sees every library but not another program's files.
  file(GLOB programs LIST_DIRECTORIES true "${root}/programs/*")
  foreach(p IN LISTS programs)
    if(IS_DIRECTORY "${p}")
      get_filename_component(name "${p}" NAME)
      tailcut_forbid_includes(${r} FOLDER programs/${name}
                              ALLOW common wire predictors coding core server policies plugins executor client sim cli PROTOBUF)
    endif()
  endforeach()
  if(bad)
    _tailcut_report_includes("${bad}")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT TAILCUT_SOURCE_DIR)
    message(FATAL_ERROR "usage: cmake -DTAILCUT_SOURCE_DIR=<repo> -P cmake/IncludeLayers.cmake")
  endif()
  tailcut_check_include_layers("${TAILCUT_SOURCE_DIR}")
  message(STATUS "layering: includes follow the layers")
endif()
