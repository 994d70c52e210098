//go:build linux && cgo

package main

/*
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// ordersync_malloc_tuned is 1 when every setting took, 0 when GLIBC_TUNABLES
// set a malloc tunable or mallopt refused one, and -1 where the C library is
// not glibc.
static int ordersync_malloc_tuned = -1;

// The settings are made while the program loads, before the Go runtime
// starts a thread: glibc fixes its number of arenas when a second thread
// first allocates, and would ignore a later M_ARENA_MAX.
__attribute__((constructor)) static void ordersync_tune_malloc(void) {
#ifdef __GLIBC__
	const char *t = getenv("GLIBC_TUNABLES");
	if (t != NULL && strstr(t, "glibc.malloc.") != NULL) {
		ordersync_malloc_tuned = 0;
		return;
	}
	int ok = 1;
	ok &= mallopt(M_ARENA_MAX, 2);
	ok &= mallopt(M_TRIM_THRESHOLD, 64 << 20);
	ok &= mallopt(M_TOP_PAD, 1 << 20);
	ok &= mallopt(M_MMAP_THRESHOLD, 32 << 20);
	ordersync_malloc_tuned = ok;
#endif
}

static int ordersync_malloc_state(void) { return ordersync_malloc_tuned; }
*/
import "C"

// mallocTuned reports whether the program set glibc's malloc up at load:
// glibc's malloc, which SQLite allocates from, would otherwise hand memory
// back to the kernel after every burst and fault it in again on the next,
// each cgo thread in an arena of its own, trimmed as soon as 128 KiB at its
// top is free. Two arenas that keep up to 64 MiB free save those page
// faults without raising the peak RSS (docs/configuration.md).
// GLIBC_TUNABLES setting any glibc.malloc tunable wins: nothing is changed
// then.
func mallocTuned() bool { return C.ordersync_malloc_state() == 1 }
