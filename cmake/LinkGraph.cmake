# Link-graph checks: the layering of docs/ARCHITECTURE.md ("Layers") as
# configure-time assertions over the targets' link closure.
#
# tailcut_forbid_links(<target> [NOT_TARGETS t...] [NOT_MATCHING regex])
#   Walks LINK_LIBRARIES and INTERFACE_LINK_LIBRARIES of <target> and of
#   everything it reaches (imported targets included; $<LINK_ONLY:x> and
#   other generator-expression wrappers count as x, so a conditional edge
#   counts as an edge), and stops the configure with FATAL_ERROR, naming the
#   chain, when it reaches a target in NOT_TARGETS or an item (target or plain
#   library name/path) matching NOT_MATCHING.
#
# tailcut_check_layers() applies the project's rules. The top-level
# CMakeLists.txt calls it after every folder, on every configure: a
# violating edge fails the configure itself, so no test binary is needed.
# tests/layering checks the checker (a tiny project with and without a bad
# edge), so the rules cannot silently become no-ops.
include_guard(GLOBAL)

# The direct link items of `item` (empty for a plain library name).
function(_tailcut_link_items item out)
  set(items "")
  if(TARGET "${item}")
    get_target_property(aliased "${item}" ALIASED_TARGET)
    if(aliased)
      set(item "${aliased}")
    endif()
    foreach(prop LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
      get_target_property(v "${item}" ${prop})
      if(v)
        list(APPEND items ${v})
      endif()
    endforeach()
  endif()
  set(clean "")
  foreach(i IN LISTS items)
    # $<LINK_ONLY:x>, $<$<CONFIG:..>:x>, ...: keep the wrapped value.
    while(i MATCHES "^\\$<.*:(.*)>$")
      set(i "${CMAKE_MATCH_1}")
    endwhile()
    if(i STREQUAL "" OR i MATCHES "^::@" OR i MATCHES "^\\$<")
      continue()  # directory markers of cross-directory target_link_libraries
    endif()
    list(APPEND clean "${i}")
  endforeach()
  list(REMOVE_DUPLICATES clean)
  set(${out} "${clean}" PARENT_SCOPE)
endfunction()

function(tailcut_forbid_links target)
  cmake_parse_arguments(F "" "NOT_MATCHING" "NOT_TARGETS" ${ARGN})
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "tailcut_forbid_links: no target '${target}'")
  endif()
  set(queue "${target}")
  set(seen "${target}")
  while(queue)
    list(POP_FRONT queue cur)
    _tailcut_link_items("${cur}" deps)
    foreach(d IN LISTS deps)
      if(d IN_LIST seen)
        continue()
      endif()
      list(APPEND seen "${d}")
      string(MAKE_C_IDENTIFIER "${d}" id)
      set(parent_${id} "${cur}")
      set(bad FALSE)
      if(d IN_LIST F_NOT_TARGETS)
        set(bad TRUE)
      elseif(F_NOT_MATCHING AND d MATCHES "${F_NOT_MATCHING}")
        set(bad TRUE)
      endif()
      if(bad)
        set(chain "${d}")
        set(n "${d}")
        while(NOT n STREQUAL "${target}")
          string(MAKE_C_IDENTIFIER "${n}" nid)
          set(n "${parent_${nid}}")
          set(chain "${n} -> ${chain}")
        endwhile()
        message(FATAL_ERROR "layering: ${target} must not link ${d} (docs/ARCHITECTURE.md, \"Layers\"): ${chain}")
      endif()
      list(APPEND queue "${d}")
    endforeach()
  endwhile()
endfunction()

function(tailcut_check_layers)
  # ZeroMQ and protobuf: only the wire layer and what sits on it. SQLite:
  # only the live driver's journal (the core and the simulator are pure).
  set(net tailcut_wire PkgConfig::ZMQ protobuf::libprotobuf SQLite::SQLite3)
  set(net_re "([Zz][Mm][Qq]|protobuf|sqlite)")
  foreach(t tailcut_common tailcut_predictors tailcut_scheduler_core tailcut_coding tailcut_plugin_loader tailcut_policies
            tailcut_sim)
    tailcut_forbid_links(${t} NOT_TARGETS ${net} NOT_MATCHING "${net_re}")
  endforeach()
  # The executor runs kernels; it links no scheduler core and no policies.
  foreach(t tailcut_executor tailcut-executor)
    tailcut_forbid_links(${t} NOT_TARGETS tailcut_scheduler_core tailcut_policies tailcut_sim)
  endforeach()
  # The core (scheduler/core) is below everything that drives it.
  tailcut_forbid_links(tailcut_scheduler_core NOT_TARGETS tailcut_scheduler tailcut_policies tailcut_plugin_loader
                       tailcut_coding tailcut_sim tailcut_client tailcut_executor)
  # The server library is below policies/ (the daemon, programs/tailcut-scheduler, is above).
  tailcut_forbid_links(tailcut_scheduler NOT_TARGETS tailcut_policies tailcut_sim tailcut_client tailcut_executor)
  # The server's rooms (scheduler/server/CMakeLists.txt): none links the
  # server that joins them, nor another room, except edge/ -> net/ and
  # replicas/ -> durability/. SQLite is durability/'s alone, cpp-httplib
  # http/'s, libraft and libuv replicas/'s; http/ (HTTP threads that never
  # touch the core's loop) has no ZeroMQ or protobuf either.
  set(rooms tailcut_server_net tailcut_server_durability tailcut_server_http tailcut_server_edge
            tailcut_server_replicas)
  foreach(room IN LISTS rooms)
    set(others ${rooms})
    list(REMOVE_ITEM others ${room})
    if(room STREQUAL "tailcut_server_edge")
      list(REMOVE_ITEM others tailcut_server_net)
    elseif(room STREQUAL "tailcut_server_replicas")
      list(REMOVE_ITEM others tailcut_server_durability)
    endif()
    tailcut_forbid_links(${room} NOT_TARGETS tailcut_scheduler tailcut_policies tailcut_plugin_loader tailcut_sim tailcut_client
                         tailcut_executor ${others})
  endforeach()
  foreach(room tailcut_server_net tailcut_server_edge tailcut_server_http)
    tailcut_forbid_links(${room} NOT_TARGETS SQLite::SQLite3 NOT_MATCHING "sqlite")
  endforeach()
  foreach(room tailcut_server_net tailcut_server_edge tailcut_server_durability tailcut_server_replicas)
    tailcut_forbid_links(${room} NOT_TARGETS PkgConfig::HTTPLIB NOT_MATCHING "httplib")
  endforeach()
  foreach(room tailcut_server_net tailcut_server_edge tailcut_server_durability tailcut_server_http)
    tailcut_forbid_links(${room} NOT_TARGETS PkgConfig::RAFT NOT_MATCHING "raft")
  endforeach()
  tailcut_forbid_links(tailcut_server_http NOT_TARGETS ${net} NOT_MATCHING "${net_re}")
  # Policies run on the core alone, in the daemon and the simulator alike.
  tailcut_forbid_links(tailcut_policies NOT_TARGETS tailcut_scheduler tailcut_sim tailcut_client tailcut_executor)
  # The plugin loader sits on the core; the built-in policies sit on it.
  tailcut_forbid_links(tailcut_plugin_loader NOT_TARGETS tailcut_policies tailcut_scheduler tailcut_sim tailcut_client
                       tailcut_executor)
  # The coding library is pure math + the task-args codec.
  tailcut_forbid_links(tailcut_coding NOT_TARGETS tailcut_scheduler_core tailcut_policies tailcut_predictors)
  # The installed client library is wire-based: no scheduler inside it.
  tailcut_forbid_links(tailcut_client NOT_TARGETS tailcut_scheduler_core tailcut_scheduler tailcut_policies tailcut_sim)
  # The simulator is the core on virtual time: no server, no client.
  tailcut_forbid_links(tailcut_sim NOT_TARGETS tailcut_scheduler tailcut_client tailcut_local_cluster tailcut_live)
  # No library links a program's library (programs/: tailcut_live is the
  # CLI's live bench driver) or a program.
  set(programs tailcut tailcut-scheduler tailcut-executor tailcut-predict-eval tailcut-trace-gen coding-error-report)
  foreach(t tailcut_common tailcut_wire tailcut_predictors tailcut_coding tailcut_scheduler_core tailcut_scheduler
            tailcut_plugin_loader tailcut_policies tailcut_executor tailcut_client tailcut_local_cluster tailcut_sim)
    tailcut_forbid_links(${t} NOT_TARGETS tailcut_live ${programs})
  endforeach()
endfunction()
