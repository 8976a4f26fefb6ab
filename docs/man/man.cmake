# Man pages of librof and of the file formats (included from
# libclient/CMakeLists.txt).  rofd.8 and rofctl.8 are installed with their
# programs.  A few more names of the C functions are symbolic links to
# their group's page (mandoc prefers links to .so pages).
set(rof_man_dir ${PROJECT_SOURCE_DIR}/docs/man)
install(FILES
  ${rof_man_dir}/librof.3
  ${rof_man_dir}/rof_client_open.3
  ${rof_man_dir}/rof_session_open.3
  ${rof_man_dir}/rof_read.3
  ${rof_man_dir}/rof_post_read.3
  ${rof_man_dir}/rof_code_name.3
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
install(FILES ${rof_man_dir}/rof-policy.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${rof_man_dir}/rof-isa.7 ${rof_man_dir}/rof-offload.7
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man7)
foreach(link
    rof_client_close:rof_client_open rof_session_close:rof_session_open
    rof_write:rof_read rof_cas:rof_read rof_faa:rof_read rof_invoke:rof_read
    rof_poll:rof_post_read rof_completion_fd:rof_post_read)
  string(REPLACE ":" ";" pair ${link})
  list(GET pair 0 name)
  list(GET pair 1 page)
  install(CODE "file(CREATE_LINK ${page}.3
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man3/${name}.3\" SYMBOLIC)")
endforeach()
