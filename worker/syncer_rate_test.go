package worker

import (
	"math"
	"testing"
	"time"
)

// TestRateLoweredOnlyByARunOf429s: a stray 429 among accepted answers
// lowers nothing; a quarter of the window's answers refused (four at least)
// halves what the window sent; 429s to requests sent before that lowering
// do not lower it again; and a fixed cap bounds the rate a lowering
// starts from.
func TestRateLoweredOnlyByARunOf429s(t *testing.T) {
	var gauge float64
	r := newUpstreamRate(0, 0, 1, time.Hour, func(v float64) { gauge = v })
	before := time.Now()
	answer := func(ok, refused int) {
		for range ok {
			r.leave(time.Now())
			r.answered(time.Now(), false)
		}
		for range refused {
			r.leave(time.Now())
			r.answered(time.Now(), true)
		}
	}
	// Three 429s in a row are a few random refusals at a few requests a
	// second, not a limit; the fourth is.
	few := newUpstreamRate(0, 0, 1, time.Hour, func(float64) {})
	for i := range 4 {
		few.leave(time.Now())
		few.answered(time.Now(), true)
		if l := few.limit(); (i < 3) != math.IsInf(l, 1) {
			t.Fatalf("rate %v after %d answers, all 429s", l, i+1)
		}
	}
	answer(15, 1)
	if l := r.limit(); !math.IsInf(l, 1) || gauge != 0 {
		t.Fatalf("rate %v (gauge %v) after 1 of 16 answers refused, want none", l, gauge)
	}
	answer(0, 1) // 2 of 17: under a quarter
	if l := r.limit(); !math.IsInf(l, 1) {
		t.Fatalf("rate %v after 2 of 17 answers refused, want none", l)
	}
	answer(0, 4) // 6 of 21: over a quarter
	if l := r.limit(); l < 10 || l > 10.6 || gauge != l {
		t.Fatalf("rate %v (gauge %v) after 6 of 21 answers refused within a second, want about half of 21", l, gauge)
	}
	// Requests sent before the lowering, answered 429 after it.
	for range 10 {
		r.answered(before, true)
	}
	if l := r.limit(); l < 10 || l > 10.6 {
		t.Fatalf("rate %v after 429s to requests sent before the lowering, want it unchanged", l)
	}

	capped := newUpstreamRate(8, 1, 1, time.Hour, func(float64) {})
	if l := capped.limit(); l != 8 {
		t.Fatalf("capped rate %v, want 8", l)
	}
	// 20 requests leave together; their 429s lower the rate once.
	sent := time.Now()
	for range 20 {
		capped.leave(sent)
	}
	for range 20 {
		capped.answered(sent, true)
	}
	if l := capped.limit(); l < 4 || l > 4.01 {
		t.Fatalf("capped rate %v after 20 requests sent together were refused, want half the cap, which they could not pass", l)
	}
}
