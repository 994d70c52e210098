package datadir

import (
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeDisk is a Statfs whose free space the test sets.
type fakeDisk struct {
	mu    sync.Mutex
	usage map[string]Usage
	err   error
}

func (f *fakeDisk) set(path string, free, total uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage[path] = Usage{Free: free, Total: total}
}

func (f *fakeDisk) statfs(path string) (Usage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return Usage{}, f.err
	}
	return f.usage[path], nil
}

func TestSpaceWatermarkWithHysteresis(t *testing.T) {
	const mib = 1 << 20
	disk := &fakeDisk{usage: map[string]Usage{}}
	disk.set("/d", 500*mib, 1000*mib)
	disk.set("/d/js", 500*mib, 1000*mib)
	reg := prometheus.NewRegistry()
	s, err := NewSpace(SpaceConfig{
		Dirs:      map[string]string{"data": "/d", "jetstream": "/d/js"},
		Watermark: Watermark{Bytes: 100 * mib},
		Statfs:    disk.statfs, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	low := func() bool { return s.Low() != nil }
	steps := []struct {
		name    string
		js      uint64 // the jetstream dir's free MiB
		wantLow bool
	}{
		{"plenty", 500, false},
		{"at the watermark", 100, false},
		{"below it", 99, true},
		{"back above it, within the hysteresis", 120, true},
		{"a quarter above it", 125, false},
		{"just above it again", 101, false},
		{"below again", 10, true},
	}
	for _, st := range steps {
		disk.set("/d/js", st.js*mib, 1000*mib)
		s.Poll()
		if low() != st.wantLow {
			t.Fatalf("%s (%d MiB free): low %v, want %v", st.name, st.js, low(), st.wantLow)
		}
		want := 0.0
		if st.wantLow {
			want = 1
		}
		if got := testutil.ToFloat64(s.m.low.WithLabelValues("jetstream")); got != want {
			t.Errorf("%s: ordersync_disk_low{dir=jetstream} = %v, want %v", st.name, got, want)
		}
		if got := testutil.ToFloat64(s.m.free.WithLabelValues("jetstream")); got != float64(st.js*mib) {
			t.Errorf("%s: ordersync_disk_free_bytes = %v, want %v", st.name, got, st.js*mib)
		}
	}
	var lse *LowSpaceError
	if err := s.Low(); !errors.As(err, &lse) || lse.Label != "jetstream" || lse.Free != 10*mib || lse.Watermark != 100*mib {
		t.Fatalf("Low() = %v, want the jetstream dir's LowSpaceError with 10 MiB free", err)
	}
	// A failed read keeps the last state and is counted.
	disk.err = errors.New("EIO")
	s.Poll()
	if !low() || testutil.ToFloat64(s.m.errors) != 2 {
		t.Fatalf("after failed reads: low %v, errors %v; want the last state kept and 2 errors", low(), testutil.ToFloat64(s.m.errors))
	}
}

func TestWatermark(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		in    string
		total uint64
		want  uint64
	}{
		{"", 100 * gib, gib},          // the lesser: 1 GiB of 5 GiB
		{"", 10 * gib, 10 * gib / 20}, // the lesser: 5% of 10 GiB
		{"5%", 100 * gib, 5 * gib},
		{"2GiB", 100 * gib, 2 * gib},
		{"500MB", 100 * gib, 500e6},
		{"1048576", 100 * gib, 1 << 20},
		{"off", 100 * gib, 0},
		{"0", 100 * gib, 0},
	}
	for _, tt := range tests {
		w, err := ParseWatermark(tt.in)
		if err != nil {
			t.Fatalf("ParseWatermark(%q): %v", tt.in, err)
		}
		if got := w.For(tt.total); got != tt.want {
			t.Errorf("ParseWatermark(%q).For(%d) = %d, want %d", tt.in, tt.total, got, tt.want)
		}
	}
	for _, bad := range []string{"five", "5 parsecs", "-1GiB", "150%", "0%", "%"} {
		if _, err := ParseWatermark(bad); err == nil {
			t.Errorf("ParseWatermark(%q) succeeded, want an error", bad)
		}
	}
}

// TestStatfsReadsTheSystem: the real statfs answers for a real directory.
func TestStatfsReadsTheSystem(t *testing.T) {
	u, err := statfs(t.TempDir())
	if err != nil {
		t.Skipf("statfs not available here: %v", err)
	}
	if u.Total == 0 || u.Free > u.Total {
		t.Fatalf("statfs = %+v, want free within a non-zero total", u)
	}
}
