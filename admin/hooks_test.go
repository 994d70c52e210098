package admin

// SetConsoleCountBound sets how far the Orders page counts, for a test
// that is not parallel; the func it returns restores the bound.
func SetConsoleCountBound(n int) (restore func()) {
	old := consoleCountBound
	consoleCountBound = n
	return func() { consoleCountBound = old }
}
