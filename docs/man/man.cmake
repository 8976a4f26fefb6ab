# Man pages of librof and of the file formats (included from
# libclient/CMakeLists.txt).  rofd.8 and rofctl.8 are installed with their
# programs.
set(rof_man_dir ${PROJECT_SOURCE_DIR}/docs/man)
install(FILES
  ${rof_man_dir}/librof.3
  ${rof_man_dir}/rof_client_open.3
  ${rof_man_dir}/rof_client_close.3
  ${rof_man_dir}/rof_session_open.3
  ${rof_man_dir}/rof_session_close.3
  ${rof_man_dir}/rof_read.3
  ${rof_man_dir}/rof_write.3
  ${rof_man_dir}/rof_post_read.3
  ${rof_man_dir}/rof_poll.3
  ${rof_man_dir}/rof_code_name.3
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
install(FILES ${rof_man_dir}/rof-policy.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES ${rof_man_dir}/rof-isa.7 DESTINATION ${CMAKE_INSTALL_MANDIR}/man7)
