package ordersync

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"a longer text", 8, "a longer…"},
		{"añb", 2, "a…"}, // ñ is two bytes: never cut in half
		{"bad \xff byte", 20, "bad \uFFFD byte"},
		{"", 0, ""},
	}
	for _, tt := range tests {
		got := Clip(tt.in, tt.n)
		if got != tt.want || !utf8.ValidString(got) || len(got) > tt.n+len("…") && len(tt.in) > tt.n {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
