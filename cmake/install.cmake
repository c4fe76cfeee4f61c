# `make install` (cmake --install, PREFIX, DESTDIR) and `make deb` (cpack -G DEB).
#
# Why a Debian package: on a cluster the agent must be the same hangscan on every node
# (docs/slurm.md, "Putting hangscan on the nodes"); a package installed everywhere, or one
# unpacked on a shared file system, gives that. Its runtime dependencies are the ones
# dpkg-shlibdeps reads from the binary (exact sonames and versions), not a list kept by hand.
include(GNUInstallDirs)

# cpack (and `make install` of the generated build system) would otherwise build `all`, the whole
# test suite included, before packaging; `make deb` and `make install` build the hangscan target
# and package what is installed from it.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

install(TARGETS hangscan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/hangscan.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/tools/completion/hangscan.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME hangscan)
file(GLOB HS_DOC_FILES ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${HS_DOC_FILES} DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hangscan)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "hangscan")
set(CPACK_PACKAGE_CONTACT "hangscan maintainers <hangscan@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "where every thread and rank of a hung or crashed job is, and which are odd")
set(CPACK_PACKAGE_DESCRIPTION
    "hangscan takes the native and Python stacks of every thread of every rank of a hung job\n(live, from cores, or across the nodes of a Slurm job or through pdsh), groups the ranks\nby stack and names the ones that are not where the others are.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Loaded with dlopen when present (3x faster inflation of compressed DWARF): not seen by
# dpkg-shlibdeps, and hangscan works without it. gdb/pdsh/slurm-client: used when there.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libdeflate0")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client, pdsh, libc6-dbg, python3-dbg, graphviz")
include(CPack)
