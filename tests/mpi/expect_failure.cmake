# Runs a command that must fail: a non-zero exit and EXPECT (a substring) in its output.
#   cmake -DCOMMAND=<;-list> -DEXPECT=<text> -P expect_failure.cmake
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(result EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit, got 0")
endif()
string(FIND "${out}${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "exit ${result} as expected, but the output lacks \"${EXPECT}\"")
endif()
message("exit ${result} and \"${EXPECT}\" in the output, as expected")
