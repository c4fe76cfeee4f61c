/* A living process with memory a core must keep but nobody can read.
 *
 * Usage: unreadable_map READY_FD|READY_FIFO DIR
 * Why: `hangscan gcore` must not count unreadable memory as kept, and must say it is missing.
 * A private, written mapping of a file is kept (its written page is anonymous memory); after
 * the file is truncated to one page, the mapping's other pages lie beyond the end of the file:
 * reading them (process_vm_readv, or the program itself) fails with SIGBUS/EFAULT, while the
 * mapping stays in /proc/PID/maps. Here: 4 pages mapped, the first written, 3 pages (12 KiB)
 * unreadable. The address of the mapping is printed to stderr as "mapping START-END".
 * Beside it, an anonymous mapping of 3 written pages whose middle one is a guard page
 * (madvise MADV_GUARD_INSTALL, Linux 6.13+, as glibc 2.42+ makes thread-stack guards): it is
 * not in /proc/PID/maps and no read of it succeeds, but it is no lost memory. Printed as
 * "guard START-END" (the guard page), or "guard none" where the kernel has no guard regions.
 * With a third argument "guard-only", the truncated file's mapping is not made.
 */
#include "hs_ready.h"

#include <sys/mman.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define PAGES 4

/* Three written anonymous pages, the middle one made a guard page. */
static void guarded_mapping(long page) {
  char* g = mmap(NULL, (size_t)(3 * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (g == MAP_FAILED) hs_die("mmap failed");
  memset(g, 0x6b, (size_t)(3 * page));
  if (madvise(g + page, (size_t)page, MADV_GUARD_INSTALL) == 0) {
    fprintf(stderr, "guard %lx-%lx\n", (unsigned long)(g + page), (unsigned long)(g + 2 * page));
  } else {
    fprintf(stderr, "guard none\n");
  }
}

static void truncated_mapping(long page, const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/unreadable_map.%d", dir, (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, PAGES * page) != 0) hs_die("cannot create the file");
  char* m = mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) hs_die("mmap failed");
  memset(m, 0x5a, (size_t)page);   /* the written page: anonymous now, kept in a core */
  if (ftruncate(fd, page) != 0) hs_die("truncate failed");
  close(fd);
  unlink(path);
  fprintf(stderr, "mapping %lx-%lx\n", (unsigned long)m, (unsigned long)(m + PAGES * page));
}

int main(int argc, char** argv) {
  if (argc < 3) hs_die("usage: unreadable_map READY DIR [guard-only]");
  long page = sysconf(_SC_PAGESIZE);
  if (argc < 4 || strcmp(argv[3], "guard-only") != 0) truncated_mapping(page, argv[2]);
  guarded_mapping(page);
  fflush(stderr);
  hs_say_ready(argv[1]);
  for (;;) pause(); /* HS-LINE: main_pause */
}
