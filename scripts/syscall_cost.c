/*
 * The cost of one system call's entry and exit on this machine: the basis of
 * vmsim's cost.syscall (docs/cost-model.md).
 *
 * Times N calls of syscall(SYS_getppid) -- a system call that does almost
 * nothing in the kernel (task_tgid_vnr(current->real_parent) under RCU), so
 * what is measured is the entry (entry_SYSCALL_64), the dispatch and the return
 * to user space with its mitigations -- and prints the best of R rounds in
 * nanoseconds per call. The raw syscall() bypasses any libc caching.
 *
 *   cc -O2 -o /tmp/syscall_cost scripts/syscall_cost.c && /tmp/syscall_cost
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
	const long n = 2000000;
	const int rounds = 7;
	double best = 1e30;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		double per = (now_ns() - t0) / n;
		printf("round %d: %.1f ns per getppid()\n", r, per);
		if (per < best)
			best = per;
	}
	printf("best: %.1f ns per system call (entry + getppid + exit)\n", best);
	return 0;
}
