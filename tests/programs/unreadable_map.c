/* A living process with memory a core must keep but nobody can read.
 *
 * Usage: unreadable_map READY_FD|READY_FIFO DIR
 * Why: `hangscan gcore` must not count unreadable memory as kept, and must say it is missing.
 * A private, written mapping of a file is kept (its written page is anonymous memory); after
 * the file is truncated to one page, the mapping's other pages lie beyond the end of the file:
 * reading them (process_vm_readv, or the program itself) fails with SIGBUS/EFAULT, while the
 * mapping stays in /proc/PID/maps. Here: 4 pages mapped, the first written, 3 pages (12 KiB)
 * unreadable. The address of the mapping is printed to stderr as "mapping START-END".
 */
#include "hs_ready.h"

#include <sys/mman.h>

#define PAGES 4

int main(int argc, char** argv) {
  if (argc < 3) hs_die("usage: unreadable_map READY DIR");
  long page = sysconf(_SC_PAGESIZE);
  char path[4096];
  snprintf(path, sizeof path, "%s/unreadable_map.%d", argv[2], (int)getpid());
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, PAGES * page) != 0) hs_die("cannot create the file");
  char* m = mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) hs_die("mmap failed");
  memset(m, 0x5a, (size_t)page);   /* the written page: anonymous now, kept in a core */
  if (ftruncate(fd, page) != 0) hs_die("truncate failed");
  close(fd);
  unlink(path);
  fprintf(stderr, "mapping %lx-%lx\n", (unsigned long)m, (unsigned long)(m + PAGES * page));
  fflush(stderr);
  hs_say_ready(argv[1]);
  for (;;) pause(); /* HS-LINE: main_pause */
}
