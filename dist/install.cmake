# Run by `cmake --install` (CMakeLists.txt sets DBCRON_* before it): the
# files that name installed paths, written for the prefix being installed
# to.  file(INSTALL) adds $DESTDIR itself.
foreach(d LIBDIR INCLUDEDIR BINDIR MANDIR SYSCONFDIR LIBEXECDIR)
  if(IS_ABSOLUTE "${DBCRON_${d}}")
    set(FULL_${d} "${DBCRON_${d}}")
  else()
    set(FULL_${d} "${CMAKE_INSTALL_PREFIX}/${DBCRON_${d}}")
  endif()
endforeach()
# /etc for PREFIX=/usr, as GNUInstallDirs has it (a packager's
# -DCMAKE_INSTALL_SYSCONFDIR=/etc is absolute and kept above)
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT IS_ABSOLUTE "${DBCRON_SYSCONFDIR}")
  set(FULL_SYSCONFDIR "/etc")
endif()
# what the templates name
set(DBCRON_PC_LIBDIR "${FULL_LIBDIR}")
set(DBCRON_PC_INCLUDEDIR "${FULL_INCLUDEDIR}")
set(CMAKE_INSTALL_FULL_BINDIR "${FULL_BINDIR}")
set(CMAKE_INSTALL_FULL_LIBEXECDIR "${FULL_LIBEXECDIR}")
configure_file(${DBCRON_SRC}/dist/dbcron.pc.in ${DBCRON_OUT}/dbcron.pc @ONLY)
configure_file(${DBCRON_SRC}/dist/man/dbcron.1 ${DBCRON_OUT}/dbcron.1 @ONLY)
set(CMAKE_INSTALL_FULL_SYSCONFDIR "${FULL_SYSCONFDIR}")
configure_file(${DBCRON_SRC}/dist/man/dbcron.conf.5 ${DBCRON_OUT}/dbcron.conf.5 @ONLY)
configure_file(${DBCRON_SRC}/dist/dbcron-node.service.in ${DBCRON_OUT}/dbcron-node.service @ONLY)
file(INSTALL ${DBCRON_OUT}/dbcron.pc DESTINATION "${FULL_LIBDIR}/pkgconfig")
file(INSTALL ${DBCRON_OUT}/dbcron.1 DESTINATION "${FULL_MANDIR}/man1")
file(INSTALL ${DBCRON_OUT}/dbcron.conf.5 DESTINATION "${FULL_MANDIR}/man5")
# systemd's place under the prefix: /usr/lib/systemd/system for PREFIX=/usr,
# /usr/local/lib/systemd/system (which systemd reads too) for the default
file(INSTALL ${DBCRON_OUT}/dbcron-node.service DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
# a commented example, never the live file: an operator's
# /etc/dbcron/dbcron.conf is not overwritten by an upgrade
file(INSTALL ${DBCRON_SRC}/dist/dbcron.conf.example DESTINATION "${FULL_SYSCONFDIR}/dbcron")
