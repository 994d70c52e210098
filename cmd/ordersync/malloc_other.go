//go:build !linux || !cgo

package main

// mallocTuned is false: the settings made on Linux are glibc's.
func mallocTuned() bool { return false }
