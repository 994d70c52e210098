package ordersync

import (
	"slices"
	"testing"
)

func TestNameTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"José Peña", []string{"jose", "pena"}},
		{"  MARÍA   josé-RUIZ ", []string{"maria", "jose", "ruiz"}},
		{"Ana ana ANA", []string{"ana"}},
		{"Zoë O'Brien", []string{"zoe", "o", "brien"}},
		{"François Ærø", []string{"francois", "ærø"}},
		{"Jo\u0301se", []string{"jose"}}, // already decomposed
		{"Смирнов Ёлкин", []string{"смирнов", "елкин"}},
		{"", nil},
		{"-- ..", nil},
	} {
		if got := NameTokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("NameTokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
