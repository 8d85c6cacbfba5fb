// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtier-cmc: cross-modifying code, checked. Runs in the testbed's L1 host to
 * test the emulator under it (tests/testbed/qemu-l1/0001, docs/testbed.md).
 *
 *   vtier-cmc [SECONDS]     exit 0: no stale code seen; 1: stale code ran
 *
 * A writer thread keeps rewriting the immediate of "mov $imm32, %eax; ret"
 * in a page of its own, and publishes each value after its store. A runner
 * thread on the other CPU reads the published value, executes CPUID (a
 * serializing instruction: after it, x86 guarantees that this CPU fetches
 * what was stored before, Intel SDM vol. 3 8.1.3 "Handling Self- and
 * Cross-Modifying Code", AMD APM vol. 2 7.6.1) and calls the function: it
 * must return that value or a later one. An older one is stale code: a
 * translation that missed the store (TCG translated the page while the
 * writer stored to it, before the page was marked as code).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint8_t *code;
static volatile uint32_t published;
static volatile int stop;

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *writer(void *arg)
{
    uint32_t v = 1;

    (void)arg;
    pin(0);
    while (!stop) {
        v++;
        __atomic_store_n((uint32_t *)(code + 1), v, __ATOMIC_RELEASE);
        __atomic_store_n(&published, v, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void serialize(void)
{
    uint32_t a = 0, b, c = 0, d;

    __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 30;
    uint32_t (*fn)(void);
    unsigned long calls = 0, stale = 0;
    uint32_t worst = 0;
    pthread_t w;
    time_t end;

    code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        perror("vtier-cmc: mmap RWX");
        return 2;
    }
    memset(code, 0xcc, 4096);
    code[0] = 0xb8;                         /* mov $imm32, %eax */
    memset(code + 1, 0, 4);
    code[5] = 0xc3;                         /* ret */
    fn = (uint32_t (*)(void))code;
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "vtier-cmc: needs 2 CPUs\n");
        return 2;
    }
    if (pthread_create(&w, NULL, writer, NULL)) {
        perror("vtier-cmc: pthread_create");
        return 2;
    }
    pin(1);
    end = time(NULL) + seconds;
    while (time(NULL) < end) {
        for (int i = 0; i < 10000; i++) {
            uint32_t want = __atomic_load_n(&published, __ATOMIC_ACQUIRE);
            uint32_t got;

            serialize();
            got = fn();
            calls++;
            if (got < want) {
                stale++;
                if (want - got > worst) {
                    worst = want - got;
                }
            }
        }
    }
    stop = 1;
    pthread_join(w, NULL);
    printf("vtier-cmc: %lu calls in %d s, %lu returned a value older than the "
           "one published before the call (worst: %u behind)\n",
           calls, seconds, stale, worst);
    return stale ? 1 : 0;
}
