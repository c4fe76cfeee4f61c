# The version hangscan reports (--version, the agent documents of --slurm-job and pdsh) and the
# git commit it was built from: HS_VERSION_CPP, a generated source of hs_util (src/util/version.h).
#
# Why at configure time, and why the git files are configure dependencies: the commit is read once
# (`git rev-parse`), and the configure step re-runs by itself when HEAD or the branch it points to
# moves, so a build never reports the commit before the last one. Outside a git checkout (a
# release tarball) the commit is "unknown", or what -DHANGSCAN_GIT_COMMIT=... says.
set(HANGSCAN_GIT_COMMIT "" CACHE STRING "Commit to report when building outside a git checkout")

set(HS_GIT_COMMIT unknown)
if(HANGSCAN_GIT_COMMIT)
  set(HS_GIT_COMMIT ${HANGSCAN_GIT_COMMIT})
else()
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --show-toplevel
                    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE hs_git_top
                    RESULT_VARIABLE hs_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    # Only this project's own checkout: a tarball unpacked inside another repository is not it.
    if(hs_git_rc EQUAL 0 AND EXISTS "${hs_git_top}")
      file(REAL_PATH "${hs_git_top}" hs_git_top)
      file(REAL_PATH "${CMAKE_SOURCE_DIR}" hs_src_real)
    endif()
    if(hs_git_rc EQUAL 0 AND hs_git_top STREQUAL hs_src_real)
      execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE hs_commit
                      RESULT_VARIABLE hs_git_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(hs_git_rc EQUAL 0 AND hs_commit)
        set(HS_GIT_COMMIT ${hs_commit})
      endif()
      execute_process(COMMAND ${GIT_EXECUTABLE} symbolic-ref -q HEAD
                      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE hs_ref
                      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      set(hs_paths HEAD packed-refs)
      if(hs_ref)
        list(APPEND hs_paths ${hs_ref})
      endif()
      foreach(p ${hs_paths})
        execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --path-format=absolute --git-path ${p}
                        WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE hs_file
                        OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
        if(hs_file AND EXISTS "${hs_file}")
          set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${hs_file}")
        endif()
      endforeach()
    endif()
  endif()
endif()

# configure_file rewrites the file only when its text changes: a re-configure with the same
# commit recompiles nothing.
set(HS_VERSION_CPP ${CMAKE_BINARY_DIR}/generated/version.cpp)
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.cpp.in ${HS_VERSION_CPP} @ONLY)
message(STATUS "hangscan ${PROJECT_VERSION} (commit ${HS_GIT_COMMIT})")
