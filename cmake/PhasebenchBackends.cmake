# Backend bookkeeping: each backend is optional with PHASEBENCH_WITH_<B> = AUTO | ON | OFF.
#   AUTO (default): build it when its dependencies are found, say why not otherwise;
#   ON: fail configure when they are missing;  OFF: do not build it.
# backends/<b>/CMakeLists.txt calls phasebench_backend_begin(), then either
# phasebench_backend_missing() or phasebench_backend_enabled(); configure ends with a summary table.

# All objects that make up phasebench: the core, the workloads and every enabled backend.
# The executable and the tests link this one target (object libraries keep the self-registering
# statics that a static library would let the linker drop).
add_library(phasebench_everything INTERFACE)

# Adds an object library's objects (and its usage requirements) to phasebench_everything.
# Linking an object library only transitively would drop its objects, so they are named here.
function(phasebench_add_objects target)
  target_sources(phasebench_everything INTERFACE $<TARGET_OBJECTS:${target}>)
  target_link_libraries(phasebench_everything INTERFACE ${target})
endfunction()

function(phasebench_backend_begin name out_enabled)
  string(TOUPPER "${name}" upper)
  set(PHASEBENCH_WITH_${upper} AUTO CACHE STRING "Build the ${name} backend: AUTO, ON or OFF")
  set_property(CACHE PHASEBENCH_WITH_${upper} PROPERTY STRINGS AUTO ON OFF)
  set_property(GLOBAL APPEND PROPERTY PHASEBENCH_BACKENDS ${name})
  if(PHASEBENCH_WITH_${upper} STREQUAL "OFF")
    set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_STATUS "off")
    set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_WHY "PHASEBENCH_WITH_${upper}=OFF")
    set(${out_enabled} FALSE PARENT_SCOPE)
  else()
    set(${out_enabled} TRUE PARENT_SCOPE)
  endif()
endfunction()

function(phasebench_backend_missing name why)
  string(TOUPPER "${name}" upper)
  if(PHASEBENCH_WITH_${upper} STREQUAL "ON")
    message(FATAL_ERROR "PHASEBENCH_WITH_${upper}=ON but the ${name} backend cannot be built: ${why}")
  endif()
  set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_STATUS "off")
  set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_WHY "${why}")
endfunction()

# Registers the object library of an enabled backend. Its variant files are the ones named
# optimized/<suite>/<workload>-<name>.<ext>: adding such a file adds the variant.
function(phasebench_backend_enabled name target detail)
  set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_STATUS "on")
  set_property(GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_WHY "${detail}")
  phasebench_add_objects(${target})
  target_compile_definitions(phasebench_everything INTERFACE PHASEBENCH_HAS_${name})
endfunction()

# The variant sources of a backend: optimized/*/*-<name>.<ext> for each extension given.
function(phasebench_variant_sources name out)
  set(result)
  foreach(ext IN LISTS ARGN)
    file(GLOB found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/optimized/*/*-${name}.${ext})
    list(APPEND result ${found})
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(phasebench_print_backend_summary)
  get_property(names GLOBAL PROPERTY PHASEBENCH_BACKENDS)
  message(STATUS "")
  message(STATUS "phasebench backends")
  message(STATUS "  backend     built  detail")
  foreach(name IN LISTS names)
    get_property(status GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_STATUS)
    get_property(why GLOBAL PROPERTY PHASEBENCH_BACKEND_${name}_WHY)
    string(LENGTH "${name}" len)
    math(EXPR pad "12 - ${len}")
    string(REPEAT " " ${pad} spaces)
    if(status STREQUAL "on")
      message(STATUS "  ${name}${spaces}yes    ${why}")
    else()
      message(STATUS "  ${name}${spaces}no     ${why}")
    endif()
  endforeach()
  message(STATUS "")
endfunction()
