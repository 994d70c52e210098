package batch

import (
	"slices"
	"testing"
)

// TestDrain: what is waiting goes in batches of at most max, in order; a
// lone value goes at once, alone; Drain returns when the channel closes.
func TestDrain(t *testing.T) {
	ch := make(chan int, 10)
	for i := range 7 {
		ch <- i
	}
	var got [][]int
	handled := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Drain(ch, 3, func(b []int) {
			got = append(got, slices.Clone(b))
			handled <- struct{}{}
		})
	}()
	for range 3 {
		<-handled
	}
	ch <- 7 // arrives after the waiting ones were handled: a batch of its own
	<-handled
	close(ch)
	<-done
	want := [][]int{{0, 1, 2}, {3, 4, 5}, {6}, {7}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}
