// An MPI job where rank ODD skips the second MPI_Allreduce (built with mpicxx for Open MPI
// and for MPICH by tests/CMakeLists.txt, not by the generic program rule).
//
// Why: the classic HPC hang. Every rank joins a first MPI_Allreduce; then rank ODD goes to
// wait_for_checkpoint() (a sleep) and the others enter the second MPI_Allreduce, where both
// MPIs busy-poll (state R): a snapshot sees them in PMPI_Allreduce, the odd rank elsewhere.
//
// usage: mpirun -np N mpi_hang CTL_SOCKET [ODD]
// CTL_SOCKET is a Unix datagram socket (tests/programs/hs_rank_ready.py, ParkCollector):
// each rank sends "parked RANK PID TID EXPECT" right before it blocks or spins.
#include <mpi.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr unsigned kHangSeconds = 3600;

void notify_parked(const char* ctl, int rank, const char* expect) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, ctl, sizeof(addr.sun_path) - 1);
  char msg[128];
  int n = std::snprintf(msg, sizeof msg, "parked %d %d %ld %s", rank, static_cast<int>(getpid()),
                        static_cast<long>(syscall(SYS_gettid)), expect);
  if (sendto(fd, msg, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0)
    std::perror("mpi_hang: notify");
  close(fd);
}

__attribute__((noinline)) void wait_for_checkpoint(const char* ctl, int rank) {
  notify_parked(ctl, rank, "230,35");
  for (;;) sleep(kHangSeconds);  // HS-LINE: mpi-odd
}

__attribute__((noinline)) double train_step(const char* ctl, int rank, int odd, double value) {
  if (rank == odd) wait_for_checkpoint(ctl, rank);
  double sum = 0;
  notify_parked(ctl, rank, "spin");
  MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  // HS-LINE: mpi-allreduce
  return sum;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: mpi_hang CTL_SOCKET [ODD]\n");
    MPI_Abort(MPI_COMM_WORLD, 64);
  }
  alarm(kHangSeconds);  // a forgotten job does not outlive the hour
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int odd = argc > 2 ? std::atoi(argv[2]) : 2;
  double value = rank + 1.0;
  double sum = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);  // every rank joins
  sum = train_step(argv[1], rank, odd, sum);
  std::printf("rank %d: %g\n", rank, sum);
  MPI_Finalize();
  return 0;
}
