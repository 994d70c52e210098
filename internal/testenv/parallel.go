package testenv

import (
	"flag"
	"strconv"
)

// WaitingParallel sets -test.parallel to n unless the command line set it.
// It is for a package whose parallel tests mostly wait (timers, leases,
// other processes) rather than compute: the default, GOMAXPROCS, lets only
// two of them wait at once on a 2-core machine. Call it from TestMain
// before m.Run.
func WaitingParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
