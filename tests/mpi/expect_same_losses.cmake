# Runs `parallax run` under mpirun and on the threads backend with the same arguments and
# requires the same losses (float64, written with 17 significant digits: bit for bit).
#   cmake -DMPIRUN=<;-list> -DPARALLAX=<path> -DARGS=<;-list> -DWORK=<dir> -P expect_same_losses.cmake
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${MPIRUN} ${PARALLAX} run ${ARGS} --json ${WORK}/mpi.json RESULT_VARIABLE mpi_result
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT mpi_result EQUAL 0)
  message(FATAL_ERROR "mpirun parallax run failed (${mpi_result}):\n${out}${err}")
endif()
execute_process(COMMAND ${PARALLAX} run ${ARGS} --backend threads --json ${WORK}/threads.json
                RESULT_VARIABLE threads_result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT threads_result EQUAL 0)
  message(FATAL_ERROR "parallax run on threads failed (${threads_result}):\n${out}${err}")
endif()
file(READ "${WORK}/mpi.json" mpi_json)
file(READ "${WORK}/threads.json" threads_json)
string(JSON mpi_backend GET "${mpi_json}" backend)
string(JSON mpi_losses GET "${mpi_json}" losses)
string(JSON threads_losses GET "${threads_json}" losses)
if(NOT mpi_backend STREQUAL "mpi")
  message(FATAL_ERROR "the mpirun job ran on the ${mpi_backend} backend")
endif()
if(NOT mpi_losses STREQUAL threads_losses)
  message(FATAL_ERROR "losses differ:\n  mpi     ${mpi_losses}\n  threads ${threads_losses}")
endif()
message("mpi and threads losses agree bit for bit: ${mpi_losses}")
