# rof-kvload, the kvstore's load client (kvload.cpp), and the unit test of
# its parts without the device.  Included by CMakeLists.txt here.
add_executable(rof-kvload kvload.cpp)
target_link_libraries(rof-kvload PRIVATE rofkv Threads::Threads)
set_target_properties(rof-kvload PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples)
rof_warnings(rof-kvload)
if(TARGET GTest::gtest_main)
  add_executable(rof_kvload_test kvload_test.cpp)
  target_link_libraries(rof_kvload_test PRIVATE GTest::gtest_main)
  rof_warnings(rof_kvload_test)
  gtest_discover_tests(rof_kvload_test)
endif()
