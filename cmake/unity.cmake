# Unity (jumbo) builds: a target's sources compiled a few at a time as one
# translation unit each, so that the headers every file includes (the
# standard library, GoogleTest, nlohmann/json, CLI11) are parsed and their
# templates instantiated once per batch instead of once per file. On two
# cores this halves a cold build (scripts/run-tests prints the phase times).
#
# CMake's own UNITY_BUILD writes absolute paths into the generated files,
# which would make every clone's objects different to ccache; these files
# include their sources by paths relative to themselves, so a second clone
# of the same commit finds all of its objects in the cache.
#
# SMOLINFER_UNITY=OFF compiles every file on its own (an editor's inner
# loop recompiles one file instead of its batch; also the check that no file
# leans on what an earlier file of its batch declared).
option(SMOLINFER_UNITY "Compile sources in batches, each as one translation unit" ON)
set(SMOLINFER_UNITY_BATCH 8 CACHE STRING "Most sources in one unity translation unit")

# smolinfer_unity(<out-var> <name> <source>...): sets <out-var> to the
# sources to compile in place of <source>...: the generated batches
# (unity/<name>-<i>.cpp in the current binary directory) or, with
# SMOLINFER_UNITY=OFF, the sources themselves.
function(smolinfer_unity out name)
  if(NOT SMOLINFER_UNITY)
    set(${out} ${ARGN} PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/unity)
  set(batches)
  set(index 0)
  set(count 0)
  set(content "")
  foreach(src IN LISTS ARGN)
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    file(RELATIVE_PATH rel ${dir} ${abs})
    string(APPEND content "#include \"${rel}\"\n")
    math(EXPR count "${count} + 1")
    if(count EQUAL SMOLINFER_UNITY_BATCH)
      file(CONFIGURE OUTPUT ${dir}/${name}-${index}.cpp CONTENT "${content}" @ONLY)
      list(APPEND batches ${dir}/${name}-${index}.cpp)
      math(EXPR index "${index} + 1")
      set(count 0)
      set(content "")
    endif()
  endforeach()
  if(count GREATER 0)
    file(CONFIGURE OUTPUT ${dir}/${name}-${index}.cpp CONTENT "${content}" @ONLY)
    list(APPEND batches ${dir}/${name}-${index}.cpp)
  endif()
  set(${out} ${batches} PARENT_SCOPE)
endfunction()

# smolinfer_unity_folders(<out-var> <name> <source>...): the same, batching
# only files of one folder together (a layer's helpers with the same names
# as another layer's never meet).
function(smolinfer_unity_folders out name)
  set(folders)
  foreach(src IN LISTS ARGN)
    get_filename_component(folder ${src} DIRECTORY)
    string(REPLACE "/" "_" key "${folder}")
    if(key STREQUAL "")
      set(key top)
    endif()
    list(APPEND folders ${key})
    list(APPEND sources_${key} ${src})
  endforeach()
  list(REMOVE_DUPLICATES folders)
  set(all)
  foreach(key IN LISTS folders)
    smolinfer_unity(batches ${name}-${key} ${sources_${key}})
    list(APPEND all ${batches})
  endforeach()
  set(${out} ${all} PARENT_SCOPE)
endfunction()
