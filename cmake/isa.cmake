# One helper: build a directory of CPU kernels as an OBJECT library compiled for one ISA.
# Each ISA directory holds the same file names and exports only its kernel table.
function(tinfer_isa_library name dir)
  file(GLOB srcs CONFIGURE_DEPENDS ${dir}/*.cpp)
  if(NOT srcs)
    return()
  endif()
  add_library(${name} OBJECT ${srcs})
  target_compile_options(${name} PRIVATE ${ARGN})
  target_link_libraries(${name} PRIVATE tinfer_core tinfer_quant)
endfunction()

# A library from the .cpp files of its directory; an INTERFACE library while it has none yet.
function(tinfer_library name)
  cmake_parse_arguments(L "" "" "GLOBS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${L_GLOBS})
  if(srcs)
    add_library(${name} STATIC ${srcs})
    target_link_libraries(${name} PUBLIC ${L_PUBLIC_LIBS} PRIVATE ${L_PRIVATE_LIBS})
  else()
    add_library(${name} INTERFACE)
    target_link_libraries(${name} INTERFACE ${L_PUBLIC_LIBS})
  endif()
endfunction()
