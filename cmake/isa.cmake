# One helper: build a directory of CPU kernels as an OBJECT library compiled for one ISA.
# Each ISA directory holds the same file names and exports only its kernel table.
function(tinfer_isa_library name dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  add_library(${name} OBJECT ${srcs})
  target_compile_options(${name} PRIVATE ${ARGN})
  target_link_libraries(${name} PRIVATE tinfer_core tinfer_quant)
endfunction()
