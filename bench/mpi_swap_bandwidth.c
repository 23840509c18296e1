/* Bandwidth of the MPI transfer that edgeframe's per-layer exchange makes through LAMMPS (issue
 * #8): two ranks swap one message each way at the same time, as LAMMPS' forward / reverse
 * communication does per swap (MPI_Irecv, MPI_Send, MPI_Wait), from plain malloc'd host buffers
 * (LAMMPS' buf_send / buf_recv). Prints GB/s per message size (bytes one way / time per swap),
 * best of REPS, so that a transport setting (OMPI_MCA_...) can be judged before a LAMMPS run.
 *   mpicc -O2 bench/mpi_swap_bandwidth.c -o /tmp/swap && mpirun -np 2 /tmp/swap [max_MB]   */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) fprintf(stderr, "mpi_swap_bandwidth: needs exactly 2 ranks, got %d\n", n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const size_t max_mb = argc > 1 ? (size_t)atol(argv[1]) : 64;
  const size_t max_bytes = max_mb << 20;
  char *send = malloc(max_bytes), *recv = malloc(max_bytes);
  if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 3);
  memset(send, me + 1, max_bytes);    /* touch every page before timing */
  memset(recv, 0, max_bytes);
  const int other = 1 - me, reps = 10;
  if (me == 0) printf("%12s %10s %10s\n", "bytes", "ms/swap", "GB/s");
  for (size_t bytes = 1 << 16; bytes <= max_bytes; bytes *= 4) {
    double best = 1e30;
    for (int r = 0; r < reps + 2; r++) {
      MPI_Request req;
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Irecv(recv, (int)bytes, MPI_CHAR, other, 0, MPI_COMM_WORLD, &req);
      MPI_Send(send, (int)bytes, MPI_CHAR, other, 0, MPI_COMM_WORLD);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      double t = MPI_Wtime() - t0, tmax;
      MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 2 && tmax < best) best = tmax;
    }
    if (recv[bytes - 1] != (char)(other + 1)) {
      fprintf(stderr, "rank %d: wrong data received at %zu bytes\n", me, bytes);
      MPI_Abort(MPI_COMM_WORLD, 4);
    }
    if (me == 0) printf("%12zu %10.3f %10.2f\n", bytes, best * 1e3, bytes / best * 1e-9);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
