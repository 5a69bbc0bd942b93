# Debian packages (docs/DEPLOY.md): `cpack -G DEB` in a build folder makes
#   tailcut_VERSION-1_ARCH.deb      binaries, systemd units, /etc/tailcut
#                                   (conffiles), the example plugin; its
#                                   postinst makes the `tailcut` user and
#                                   /var/lib/tailcut (packaging/debian/)
#   tailcut-dev_VERSION-1_ARCH.deb  headers, static client libraries, the
#                                   CMake and pkg-config packages
# Installed under /usr. Library dependencies come from dpkg-shlibdeps.
# The CUDA module is left out (component cuda: NVIDIA's libraries are no
# Debian package).
set(CPACK_PACKAGE_NAME tailcut)
set(CPACK_PACKAGE_VENDOR tailcut)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed task scheduler that cuts tail latency")
set(CPACK_PACKAGE_CONTACT "tailcut maintainers <tailcut@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # what CPACK_SET_DESTDIR installs under
# DESTDIR staging: the units' ExecStart and the /etc files get their final
# paths (/usr/bin/..., /etc/tailcut), not the staging folder's.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)  # as Debian ships binaries (debug info stays in the build)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime etc dev)
set(CPACK_COMPONENT_RUNTIME_GROUP main)
set(CPACK_COMPONENT_ETC_GROUP main)
set(CPACK_COMPONENT_DEV_GROUP dev)
set(CPACK_COMPONENTS_GROUPING ONE_PER_GROUP)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_MAIN_PACKAGE_NAME tailcut)
set(CPACK_DEBIAN_MAIN_PACKAGE_DEPENDS "passwd")  # useradd in postinst
set(CPACK_DEBIAN_DEV_PACKAGE_NAME tailcut-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "tailcut (= ${PROJECT_VERSION}-1), libprotobuf-dev, libzmq3-dev, libtomlplusplus-dev, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The files under /etc are conffiles: dpkg keeps an operator's edits on
# upgrade, `dpkg -r` leaves them, `dpkg --purge` removes them.
file(WRITE ${PROJECT_BINARY_DIR}/debian/conffiles
     "/etc/tailcut/scheduler.toml\n/etc/tailcut/executor-local.toml\n/etc/tailcut/prometheus/tailcut-rules.yml\n")
set(CPACK_DEBIAN_MAIN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
