# The include direction check (ctest: include_direction, label unit).
#
# Why: the modules under src/ form layers (docs/design.md, "Module map"); a header included
# from a module above would bring a cycle back. The table is the hs_module() lines of
# CMakeLists.txt: each module may include its own headers, include/hangscan/, and the headers of
# every module it depends on, directly or through others. CMakeLists.txt writes that table to
# MODULE_DEPS (one "module:dep dep ..." line per module); this script reads every file under
# src/ and fails on the first include of a module that is not below. A new module is one
# hs_module() line.
#
# cmake -DMODULE_DEPS=<file> -DSOURCE_DIR=<repository> -P check_includes.cmake
cmake_minimum_required(VERSION 3.20)
if(NOT MODULE_DEPS OR NOT SOURCE_DIR)
  message(FATAL_ERROR "usage: cmake -DMODULE_DEPS=FILE -DSOURCE_DIR=DIR -P check_includes.cmake")
endif()

file(STRINGS ${MODULE_DEPS} lines)
set(modules)
foreach(line ${lines})
  string(REPLACE ":" ";" parts "${line}")
  list(GET parts 0 mod)
  list(LENGTH parts n)
  set(deps_${mod})
  if(n GREATER 1)
    list(GET parts 1 deps)
    string(REPLACE " " ";" deps_${mod} "${deps}")
  endif()
  list(APPEND modules ${mod})
endforeach()

# Transitive closure: what each module may include besides itself.
foreach(mod ${modules})
  set(reach ${deps_${mod}})
  set(todo ${deps_${mod}})
  while(todo)
    list(POP_FRONT todo d)
    foreach(dd ${deps_${d}})
      if(NOT dd IN_LIST reach)
        list(APPEND reach ${dd})
        list(APPEND todo ${dd})
      endif()
    endforeach()
  endwhile()
  if(mod IN_LIST reach)
    message(FATAL_ERROR "module ${mod} depends on itself (a cycle): ${reach}")
  endif()
  set(allowed_${mod} ${mod} ${reach})
endforeach()

file(GLOB dirs LIST_DIRECTORIES true RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/*)
set(failures 0)
foreach(dir ${dirs})
  if(NOT IS_DIRECTORY ${SOURCE_DIR}/src/${dir})
    continue()
  endif()
  if(NOT dir IN_LIST modules)
    message(SEND_ERROR "src/${dir} is not a module of CMakeLists.txt (add its hs_module() line)")
    math(EXPR failures "${failures} + 1")
    continue()
  endif()
  file(GLOB_RECURSE files ${SOURCE_DIR}/src/${dir}/*.h ${SOURCE_DIR}/src/${dir}/*.cpp
       ${SOURCE_DIR}/src/${dir}/*.c)
  foreach(f ${files})
    file(STRINGS ${f} incs REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(inc ${incs})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" path "${inc}")
      if(NOT path MATCHES "/")
        continue()   # a file next to this one
      endif()
      string(REGEX REPLACE "/.*" "" top "${path}")
      if(top STREQUAL "hangscan" OR top IN_LIST allowed_${dir})
        continue()
      endif()
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
      if(top IN_LIST modules)
        message(SEND_ERROR "${rel}: includes \"${path}\", but ${dir} may include only: ${allowed_${dir}}")
      else()
        message(SEND_ERROR "${rel}: includes \"${path}\", which is in no module")
      endif()
      math(EXPR failures "${failures} + 1")
    endforeach()
  endforeach()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} include(s) against the module map (docs/design.md, \"Module map\")")
endif()
list(LENGTH modules n)
message(STATUS "include direction: ${n} modules, every include goes down")
