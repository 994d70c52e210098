//go:build !unix

package export_test

import "testing"

func measureLock(*testing.T) func() { return func() {} }
