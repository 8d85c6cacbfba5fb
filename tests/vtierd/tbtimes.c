// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vtier-tbtimes: how long a command takes as its caller sees it, from fork to
 * its exit, over N runs (libvirt-policy: the libvirt hook with vtierd up, down
 * and hung). L1's busybox has no clock finer than 10 ms; this one is static so
 * that it runs there.
 *
 *   vtier-tbtimes [-n RUNS] [-w WARMUP] [-i STDIN-FILE] -- CMD [ARG...]
 *
 * Each run gets STDIN-FILE (default /dev/null) on stdin and /dev/null as stdout
 * and stderr. Prints one line:
 *   runs=N p50_ms=… p99_ms=… max_ms=… failed=K
 * where failed counts runs that did not exit 0 (killed ones included); the
 * warm-up runs are not counted. Exit status 0 unless it could not run at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One run: fork, exec, wait. Its time in *ms; 0 if it exited 0, 1 if not, -1 if fork failed. */
static int run_once(char **argv, const char *stdin_path, double *ms)
{
	double t0 = now_ms();
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int in = open(stdin_path, O_RDONLY);
		int out = open("/dev/null", O_WRONLY);

		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	*ms = now_ms() - t0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *stdin_path = "/dev/null";
	long runs = 100, warmup = 5, failed = 0;
	double *t;
	int opt;

	while ((opt = getopt(argc, argv, "+n:w:i:")) != -1) {
		switch (opt) {
		case 'n':
			runs = strtol(optarg, NULL, 10);
			break;
		case 'w':
			warmup = strtol(optarg, NULL, 10);
			break;
		case 'i':
			stdin_path = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (optind >= argc || runs < 1 || runs > 100000 || warmup < 0)
		goto usage;
	if (access(stdin_path, R_OK) != 0) {
		fprintf(stderr, "vtier-tbtimes: %s: %s\n", stdin_path, strerror(errno));
		return 2;
	}
	t = calloc(runs, sizeof(*t));
	if (!t)
		return 2;
	for (long i = -warmup; i < runs; i++) {
		double ms;
		int r = run_once(argv + optind, stdin_path, &ms);

		if (r < 0) {
			fprintf(stderr, "vtier-tbtimes: %s: %s\n", argv[optind], strerror(errno));
			return 2;
		}
		if (i >= 0) {
			t[i] = ms;
			failed += r;
		}
	}
	qsort(t, runs, sizeof(*t), cmp_double);
	/* nearest rank: the smallest value with at least p of the runs at or below it */
	printf("runs=%ld p50_ms=%.1f p99_ms=%.1f max_ms=%.1f failed=%ld\n", runs,
	       t[(runs * 50 + 99) / 100 - 1], t[(runs * 99 + 99) / 100 - 1], t[runs - 1], failed);
	free(t);
	return 0;
usage:
	fprintf(stderr, "usage: vtier-tbtimes [-n RUNS] [-w WARMUP] [-i STDIN-FILE] -- CMD [ARG...]\n");
	return 2;
}
