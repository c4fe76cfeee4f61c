# The eBPF recorder of `hangscan watch` (bpf/, src/watch/, docs/watch.md).
#
# Built when clang, bpftool and libbpf (libbpf-dev) are installed. The kernel types come from the
# checked-in bpf/vmlinux.h (CO-RE: every struct is marked preserve_access_index, so the field
# offsets are relocated by libbpf at load time against the running kernel's BTF): the build does
# not depend on the build machine's kernel, and the programs load on any kernel with BTF.
# docs/design.md ("The eBPF recorder's kernel types") says how to regenerate the header. The
# skeleton header comes from `bpftool gen skeleton`. Without these tools, `watch` is built without
# eBPF support and says so. These packages are in tools/deps.sh's `build` set, so `make demo`
# builds the recorder too.
foreach(tool CLANG BPFTOOL)
  if(HS_${tool} AND NOT EXISTS "${HS_${tool}}")
    unset(HS_${tool} CACHE)
  endif()
endforeach()
find_program(HS_CLANG NAMES clang clang-16 clang-15 clang-14)
find_program(HS_BPFTOOL bpftool PATHS /usr/sbin /sbin)
pkg_check_modules(LIBBPF IMPORTED_TARGET libbpf>=0.8)

# A BPF program's object and libbpf skeleton: bpf/<src> -> ${HS_BPF_OUT}/<name>.skel.h.
function(hs_bpf_skeleton name src what)
  add_custom_command(OUTPUT ${HS_BPF_OUT}/${name}.bpf.o
    COMMAND ${HS_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
            -I${HS_BPF_OUT} -I${CMAKE_SOURCE_DIR}/bpf -c ${src} -o ${HS_BPF_OUT}/${name}.bpf.o
    DEPENDS ${src} ${ARGN} ${HS_BPF_OUT}/vmlinux.h
    COMMENT "Compiling ${what}" VERBATIM)
  add_custom_command(OUTPUT ${HS_BPF_OUT}/${name}.skel.h
    COMMAND ${HS_BPFTOOL} gen skeleton ${HS_BPF_OUT}/${name}.bpf.o name ${name}
            > ${HS_BPF_OUT}/${name}.skel.h
    DEPENDS ${HS_BPF_OUT}/${name}.bpf.o
    COMMENT "Generating the libbpf skeleton of ${what}" VERBATIM)
endfunction()

# A light skeleton of bpf/<name>.bpf.c (after hs_bpf_skeleton) into hs_capture, behind
# src/capture/<name>_lskel.c (snapshot_lskel.h says why light); `cpp` is its loader, compiled
# with HANGSCAN_HAVE_BPF (a file of its own, out of the unity batch).
function(hs_capture_light_skeleton name what cpp)
  add_custom_command(OUTPUT ${HS_BPF_OUT}/${name}.lskel.h
    COMMAND ${HS_BPFTOOL} gen skeleton -L ${HS_BPF_OUT}/${name}.bpf.o name ${name}
            > ${HS_BPF_OUT}/${name}.lskel.h
    DEPENDS ${HS_BPF_OUT}/${name}.bpf.o
    COMMENT "Generating the light skeleton of ${what}" VERBATIM)
  add_custom_target(hs_${name}_skeleton DEPENDS ${HS_BPF_OUT}/${name}.lskel.h)
  add_dependencies(hs_capture hs_${name}_skeleton)
  target_sources(hs_capture PRIVATE ${CMAKE_SOURCE_DIR}/src/capture/${name}_lskel.c)
  set_property(SOURCE ${CMAKE_SOURCE_DIR}/src/capture/${cpp}
               APPEND PROPERTY COMPILE_DEFINITIONS HANGSCAN_HAVE_BPF=1)
endfunction()

set(HANGSCAN_HAVE_BPF OFF)
if(HS_CLANG AND HS_BPFTOOL AND LIBBPF_FOUND)
  set(HANGSCAN_HAVE_BPF ON)
  set(HS_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
  set(HS_BPF_SRC ${CMAKE_SOURCE_DIR}/bpf/hangscan_watch.bpf.c)
  # The checked-in header in the build directory too, where the programs' rules look for it.
  configure_file(${CMAKE_SOURCE_DIR}/bpf/vmlinux.h ${HS_BPF_OUT}/vmlinux.h COPYONLY)
  hs_bpf_skeleton(hangscan_watch ${HS_BPF_SRC} "the eBPF recorder"
                  ${CMAKE_SOURCE_DIR}/bpf/watch_events.h ${CMAKE_SOURCE_DIR}/bpf/py_frames.bpf.h
                  ${CMAKE_SOURCE_DIR}/bpf/wait_stacks.bpf.h)
  add_custom_target(hs_bpf_skeleton DEPENDS ${HS_BPF_OUT}/hangscan_watch.skel.h)
  message(STATUS "hangscan watch: eBPF recorder enabled (${HS_CLANG}, ${HS_BPFTOOL}, libbpf ${LIBBPF_VERSION})")
else()
  message(STATUS "hangscan watch: built without eBPF support (needs clang, bpftool and libbpf-dev)")
endif()

# hs_watch: with the recorder when available; the readiness check and the ptrace fallback always.
set(HS_WATCH_DEPS hs_capture hs_discovery hs_proc hs_report Threads::Threads)
if(HANGSCAN_HAVE_BPF)
  list(APPEND HS_WATCH_DEPS PkgConfig::LIBBPF)
endif()
hs_module(watch DEPS ${HS_WATCH_DEPS})
target_include_directories(hs_watch PUBLIC ${CMAKE_SOURCE_DIR}/bpf)
if(HANGSCAN_HAVE_BPF)
  add_dependencies(hs_watch hs_bpf_skeleton)
  target_include_directories(hs_watch PRIVATE ${HS_BPF_OUT})
  target_compile_definitions(hs_watch PUBLIC HANGSCAN_HAVE_BPF=1)  # and its unit tests
endif()

# The quiet dump's snapshot iterator (bpf/snapshot.bpf.c, src/capture/bpf_snapshot.cpp): built
# the same way, into hs_capture. Without eBPF, bpf_snapshot.cpp says so and dump uses ptrace.
target_include_directories(hs_capture PUBLIC ${CMAKE_SOURCE_DIR}/bpf)
if(HANGSCAN_HAVE_BPF)
  hs_bpf_skeleton(snapshot ${CMAKE_SOURCE_DIR}/bpf/snapshot.bpf.c "the quiet dump's snapshot iterator"
                  ${CMAKE_SOURCE_DIR}/bpf/snapshot_events.h ${CMAKE_SOURCE_DIR}/bpf/watch_events.h
                  ${CMAKE_SOURCE_DIR}/bpf/py_frames.bpf.h)
  # A light skeleton (src/capture/snapshot_lskel.h says why): the kernel relocates and attaches.
  hs_capture_light_skeleton(snapshot "the quiet dump's snapshot iterator" bpf_snapshot.cpp)
  target_include_directories(hs_capture PRIVATE ${HS_BPF_OUT})
  target_link_libraries(hs_capture PUBLIC PkgConfig::LIBBPF)
endif()

# The node-wide fd scan's task_file iterator (bpf/fd_holders.bpf.c, src/capture/bpf_fd_holders.cpp):
# a light skeleton of its own, into hs_capture. Without eBPF the scan reads /proc.
if(HANGSCAN_HAVE_BPF)
  hs_bpf_skeleton(fd_holders ${CMAKE_SOURCE_DIR}/bpf/fd_holders.bpf.c "the node-wide fd scan"
                  ${CMAKE_SOURCE_DIR}/bpf/fd_holders_events.h ${CMAKE_SOURCE_DIR}/bpf/watch_events.h)
  hs_capture_light_skeleton(fd_holders "the node-wide fd scan" bpf_fd_holders.cpp)
endif()
