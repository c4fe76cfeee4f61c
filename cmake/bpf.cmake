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

set(HANGSCAN_HAVE_BPF OFF)
if(HS_CLANG AND HS_BPFTOOL AND LIBBPF_FOUND)
  set(HANGSCAN_HAVE_BPF ON)
  set(HS_BPF_OUT ${CMAKE_BINARY_DIR}/bpf)
  set(HS_BPF_SRC ${CMAKE_SOURCE_DIR}/bpf/hangscan_watch.bpf.c)
  # The same header in the build directory too, for a program whose rule looks for it there.
  configure_file(${CMAKE_SOURCE_DIR}/bpf/vmlinux.h ${HS_BPF_OUT}/vmlinux.h COPYONLY)
  add_custom_command(OUTPUT ${HS_BPF_OUT}/hangscan_watch.bpf.o
    COMMAND ${CMAKE_COMMAND} -E make_directory ${HS_BPF_OUT}
    COMMAND ${HS_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
            -I${CMAKE_SOURCE_DIR}/bpf -c ${HS_BPF_SRC} -o ${HS_BPF_OUT}/hangscan_watch.bpf.o
    DEPENDS ${HS_BPF_SRC} ${CMAKE_SOURCE_DIR}/bpf/watch_events.h ${CMAKE_SOURCE_DIR}/bpf/py_frames.bpf.h
            ${CMAKE_SOURCE_DIR}/bpf/wait_stacks.bpf.h ${CMAKE_SOURCE_DIR}/bpf/vmlinux.h
    COMMENT "Compiling the eBPF recorder" VERBATIM)
  add_custom_command(OUTPUT ${HS_BPF_OUT}/hangscan_watch.skel.h
    COMMAND ${HS_BPFTOOL} gen skeleton ${HS_BPF_OUT}/hangscan_watch.bpf.o name hangscan_watch
            > ${HS_BPF_OUT}/hangscan_watch.skel.h
    DEPENDS ${HS_BPF_OUT}/hangscan_watch.bpf.o
    COMMENT "Generating the recorder's libbpf skeleton" VERBATIM)
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
