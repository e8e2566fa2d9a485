# The CTest tests every build must register, checked after every add_test (included at the
# end of the top-level CMakeLists.txt). A test that is not built, or one registered but not
# listed here, stops the configure step with its name, so a build never passes with tests
# silently missing. Each list names the condition its tests need:
#   always         every build (tests/unit/test_*.c)
#   cuda runtime   RF_WITH_CUDA=ON, which requires the CUDA toolkit (tests/unit/test_runtime_*.c)
#   cuda headers   the CUDA headers alone (tests/unit/fake_cuda: the runtime over a fake
#                  driver), also in the sanitizer build with RF_WITH_CUDA=OFF
# Adding a test: add its name to the list of its condition.
set(RF_EXPECTED_TESTS_ALWAYS
  test_bench_stats test_chain_faults test_chain_ops test_chain_plan test_chain_stream test_contract_mlir test_eval_faults test_eval_split test_eval_stats
  test_fault_plan test_fp16 test_gate_faults test_json test_npy test_onnx_import test_ref test_ref_given
  test_schedule test_schedule_hopper test_shape test_span_attr test_verify
  test_verify_random)
set(RF_EXPECTED_TESTS_CUDA_RUNTIME test_runtime_nogpu)
set(RF_EXPECTED_TESTS_CUDA_HEADERS test_runtime_faults test_runtime_stream)

function(rf_check_registered_tests)
  set(expected ${RF_EXPECTED_TESTS_ALWAYS})
  if(RF_HAVE_CUDA)
    list(APPEND expected ${RF_EXPECTED_TESTS_CUDA_RUNTIME})
  endif()
  if(CUDAToolkit_FOUND AND NOT RF_FUZZ)
    list(APPEND expected ${RF_EXPECTED_TESTS_CUDA_HEADERS})
  endif()
  # the folders that register tests: this one, and tests/unit/fake_cuda where it is built
  set(dirs ${CMAKE_CURRENT_SOURCE_DIR})
  if(CUDAToolkit_FOUND AND NOT RF_FUZZ)
    list(APPEND dirs ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/fake_cuda)
  endif()
  set(registered "")
  foreach(dir ${dirs})
    get_property(in_dir DIRECTORY ${dir} PROPERTY TESTS)
    list(APPEND registered ${in_dir})
  endforeach()
  set(missing ${expected})
  list(REMOVE_ITEM missing ${registered})
  set(unlisted ${registered})
  list(REMOVE_ITEM unlisted ${expected})
  set(headers OFF)
  if(CUDAToolkit_FOUND)
    set(headers ON)
  endif()
  list(LENGTH expected n_expected)
  list(LENGTH registered n_registered)
  if(missing OR unlisted)
    message(FATAL_ERROR
      "CTest registers ${n_registered} tests, tests/unit/expected_tests.cmake expects "
      "${n_expected} (RF_HAVE_CUDA=${RF_HAVE_CUDA}, CUDA headers=${headers}).\n"
      "  not registered: ${missing}\n"
      "  registered but not listed: ${unlisted}\n"
      "Build the missing ones (a toolkit, a source file?) or list a new test there.")
  endif()
  message(STATUS "CTest: ${n_registered} tests registered, as tests/unit/expected_tests.cmake expects")
endfunction()
