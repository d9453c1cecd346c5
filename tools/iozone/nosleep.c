/* libnosleep.so: make sleep(3) return at once.
 *
 * iozone's throughput mode (-t) calls sleep(2) twice per run in the parent,
 * after its children have finished and outside every timed region; with one
 * iozone run per batch of files those 4 s dwarf small-file runs.  The MemFS
 * benchmark preloads this library for iozone only (LD_PRELOAD); iozone's
 * timings (gettimeofday around the I/O loops) are unaffected.  nanosleep,
 * usleep and select-based waits are untouched. */
#define _GNU_SOURCE
#include <sched.h>
#include <unistd.h>

unsigned int sleep(unsigned int seconds)
{
    (void)seconds;
    sched_yield();
    return 0;
}
