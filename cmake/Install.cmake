# `cmake --install build --prefix P` (docs/DEPLOY.md): the binaries, every
# library's public headers, the generated protocol header, a CMake package
# (find_package(tailcut): tailcut::client, tailcut::plugin_api,
# tailcut::kernel_plugin_api), a pkg-config file (tailcut.pc) and the
# systemd units. cmake/Package.cmake makes .debs of the same (cpack -G DEB).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TAILCUT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tailcut)

# Daemons and tools.
foreach(exe tailcut tailcut-scheduler tailcut-executor tailcut-predict-eval tailcut-trace-gen)
  if(TARGET ${exe})
    install(TARGETS ${exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  endif()
endforeach()
# The executor looks for its CUDA module next to itself, then in ../lib.
if(TARGET tailcut_cuda)
  # Its own component: cudart and cuBLAS are NVIDIA's, not Debian's
  # packages, so the .deb leaves it out (docs/DEPLOY.md).
  install(TARGETS tailcut_cuda LIBRARY DESTINATION lib COMPONENT cuda)
endif()
# The example policy plugin, for `plugin:` chains (docs/PLUGINS.md).
install(TARGETS tailcut_example_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/tailcut/plugins COMPONENT runtime)

# Headers: every library's include/ merges into one tree (each holds only
# tailcut/<lib>/), plus the generated version.h and tailcut.pb.h (included
# as "tailcut.pb.h").
foreach(dir common wire predictors coding scheduler/core scheduler/server plugin_api policies executor client sim)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir}/include)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
  endif()
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/common/include/tailcut/common/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tailcut/common COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/wire/tailcut.pb.h ${PROJECT_SOURCE_DIR}/wire/proto/tailcut.proto
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

# Exported libraries. Static: their private dependencies (toml++) and the
# warnings target travel as link-only entries, hence in the export set too.
set_target_properties(tailcut_common PROPERTIES EXPORT_NAME common)
set_target_properties(tailcut_wire PROPERTIES EXPORT_NAME wire)
set_target_properties(tailcut_client PROPERTIES EXPORT_NAME client)
set_target_properties(tailcut_plugin_api PROPERTIES EXPORT_NAME plugin_api)
set_target_properties(tailcut_kernel_plugin_api PROPERTIES EXPORT_NAME kernel_plugin_api)
set_target_properties(tailcut_warnings PROPERTIES EXPORT_NAME warnings)
install(TARGETS tailcut_common tailcut_wire tailcut_client tailcut_plugin_api tailcut_kernel_plugin_api tailcut_warnings
        EXPORT tailcutTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(EXPORT tailcutTargets NAMESPACE tailcut:: DESTINATION ${TAILCUT_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tailcutConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tailcutConfig.cmake INSTALL_DESTINATION ${TAILCUT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tailcutConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tailcutConfig.cmake ${PROJECT_BINARY_DIR}/tailcutConfigVersion.cmake
        DESTINATION ${TAILCUT_CMAKE_DIR} COMPONENT dev)

# pkg-config: paths relative to the .pc file, so the prefix given to
# `cmake --install --prefix` needs no reconfigure.
file(RELATIVE_PATH TAILCUT_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/tailcut.pc.in ${PROJECT_BINARY_DIR}/tailcut.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tailcut.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# Configs (documented defaults) and the systemd units. The units name the
# binaries by absolute path, which is only known at install time (--prefix),
# so they are written then.
install(FILES ${PROJECT_SOURCE_DIR}/configs/scheduler.toml ${PROJECT_SOURCE_DIR}/configs/executor.toml
              ${PROJECT_SOURCE_DIR}/configs/replicas.toml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/tailcut/configs COMPONENT runtime)
install(CODE "
  set(bindir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}\")
  foreach(unit tailcut-scheduler.service tailcut-executor@.service)
    file(READ \"${PROJECT_SOURCE_DIR}/packaging/systemd/\${unit}\" text)
    string(REPLACE \"@TAILCUT_BINDIR@\" \"\${bindir}\" text \"\${text}\")
    set(dest \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
    file(MAKE_DIRECTORY \"\${dest}\")
    file(WRITE \"\${dest}/\${unit}\" \"\${text}\")
    message(STATUS \"Installing: \${dest}/\${unit}\")
  endforeach()" COMPONENT runtime)
# The .deb's /etc/tailcut (component etc, left out of a plain
# `cmake --install`, which must not write outside its prefix): the
# scheduler's config and one executor's, tailcut-executor@local, for a
# scheduler and executor on one machine; the Prometheus rules.
install(FILES ${PROJECT_SOURCE_DIR}/configs/scheduler.toml DESTINATION /etc/tailcut COMPONENT etc EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/configs/executor.toml DESTINATION /etc/tailcut RENAME executor-local.toml
        COMPONENT etc EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/tailcut-rules.yml DESTINATION /etc/tailcut/prometheus
        COMPONENT etc EXCLUDE_FROM_ALL)

# cpack -G DEB (docs/DEPLOY.md).
include(${PROJECT_SOURCE_DIR}/cmake/Package.cmake)
