//go:build race

package sim

// raceEnabled scales down tests that the race detector makes slow.
const raceEnabled = true
