# A run saved under mpirun after 3 steps and resumed under mpirun for 3 more prints the losses of
# steps 4 to 6 of an uninterrupted 6-step run (threads backend, same mesh and plan; float64 with
# 17 significant digits: bit for bit).
#   cmake -DMPIRUN=<;-list> -DPARALLAX=<path> -DARGS=<;-list> -DWORK=<dir> -P expect_resumed_losses.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
function(run_or_fail label)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${label} failed (${result}):\n${out}${err}")
  endif()
endfunction()
run_or_fail("uninterrupted run" ${PARALLAX} run ${ARGS} --steps 6 --backend threads --json ${WORK}/whole.json)
run_or_fail("mpirun --save" ${MPIRUN} ${PARALLAX} run ${ARGS} --steps 3 --save ${WORK}/checkpoint
            --json ${WORK}/first.json)
run_or_fail("mpirun --load" ${MPIRUN} ${PARALLAX} run ${ARGS} --steps 3 --load ${WORK}/checkpoint
            --json ${WORK}/second.json)
file(READ "${WORK}/whole.json" whole)
file(READ "${WORK}/second.json" second)
string(JSON backend GET "${second}" backend)
if(NOT backend STREQUAL "mpi")
  message(FATAL_ERROR "the resumed job ran on the ${backend} backend")
endif()
foreach(step RANGE 0 2)
  math(EXPR whole_step "${step} + 3")
  string(JSON expected GET "${whole}" losses ${whole_step})
  string(JSON actual GET "${second}" losses ${step})
  if(NOT expected STREQUAL actual)
    message(FATAL_ERROR "step ${whole_step} + 1: resumed loss ${actual}, uninterrupted ${expected}")
  endif()
endforeach()
message("resumed under mpirun: steps 4-6 match the uninterrupted run bit for bit")
