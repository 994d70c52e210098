package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fatalTB records Fatalf and stops there, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// awaitFails runs Await on a fatalTB and returns its failure, "" if none.
func awaitFails(timeout time.Duration, check func() error) (msg string) {
	tb := &fatalTB{}
	defer func() {
		if r := recover(); r != nil && r != tb {
			panic(r)
		}
		msg = tb.msg
	}()
	Await(tb, timeout, time.Millisecond, check)
	return ""
}

// TestAwait: Await returns once check passes, and a timeout fails with
// check's last error.
func TestAwait(t *testing.T) {
	calls := 0
	if msg := awaitFails(time.Minute, func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}); msg != "" || calls != 3 {
		t.Errorf("a check passing on its third call: failed %q after %d calls", msg, calls)
	}
	n := 0
	msg := awaitFails(20*time.Millisecond, func() error { n++; return fmt.Errorf("%d of 5 done", n) })
	if !strings.HasPrefix(msg, "timed out after 20ms: ") || !strings.HasSuffix(msg, fmt.Sprintf(": %d of 5 done", n)) {
		t.Errorf("a check that never passes failed with %q, want its last error (%d of 5)", msg, n)
	}
}
