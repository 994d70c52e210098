package ordersync

import (
	"slices"
	"testing"
)

func TestPhoneKey(t *testing.T) {
	tests := []struct {
		phone, country, want string
	}{
		// El Salvador: the ways a buyer or a clerk writes one number.
		{"+50373657811", "SV", "50373657811"},
		{"+503 7365 7811", "SV", "50373657811"},
		{"+503 7365-7811", "SV", "50373657811"},
		{"(503) 7365.7811", "SV", "50373657811"},
		{"503 7365 7811", "SV", "50373657811"},
		{"00503 7365 7811", "SV", "50373657811"},
		{"73657811", "SV", "50373657811"},
		{"7365-7811", "SV", "50373657811"},
		{" 7365 7811 ", "sv", "50373657811"},
		// A number with its code is the same in any store.
		{"+50373657811", "ES", "50373657811"},
		{"+50373657811", "", "50373657811"},
		// Spain: no trunk prefix, nine digits.
		{"612 345 678", "ES", "34612345678"},
		{"+34 612 34 56 78", "ES", "34612345678"},
		{"34612345678", "ES", "34612345678"},
		// The trunk prefix is dropped: United Kingdom, France, Argentina.
		{"07911 123456", "GB", "447911123456"},
		{"+44 (0)7911 123456", "GB", "447911123456"},
		{"01 23 45 67 89", "FR", "33123456789"},
		{"011 4123-4567", "AR", "541141234567"},
		// North America: the trunk prefix is the calling code.
		{"(212) 555-0100", "US", "12125550100"},
		{"1 212 555 0100", "US", "12125550100"},
		{"212.555.0100", "CA", "12125550100"},
		// Mexico, Guatemala, Colombia.
		{"55 1234 5678", "MX", "525512345678"},
		{"5512345678", "MX", "525512345678"},
		{"2222-3333", "GT", "50222223333"},
		{"300 123 4567", "CO", "573001234567"},
		// Italy keeps national numbers that begin with 39 national.
		{"393 123 4567", "IT", "393931234567"},
		// A country without a plan: the digits as written.
		{"612345678", "JP", "612345678"},
		{"612345678", "", "612345678"},
		// Not a number to look up.
		{"", "SV", ""},
		{"12345", "SV", ""},
		{"12.50", "SV", ""},
		{"jose@example.com", "SV", ""},
		{"7365 7811 ext 2", "SV", ""},
		{"+1234567890123456", "", ""},
		{"+", "SV", ""},
	}
	for _, tt := range tests {
		if got := PhoneKey(tt.phone, tt.country); got != tt.want {
			t.Errorf("PhoneKey(%q, %q) = %q, want %q", tt.phone, tt.country, got, tt.want)
		}
	}
}

func TestPhoneSearchKeys(t *testing.T) {
	tests := []struct {
		q         string
		countries []string
		want      []string
	}{
		{"73657811", []string{"SV"}, []string{"50373657811", "73657811"}},
		// A length the country does not use is still read in it.
		{"7365-7811", []string{"SV", "ES"}, []string{"50373657811", "3473657811", "73657811"}},
		{"+503 7365 7811", []string{"SV", "ES"}, []string{"50373657811"}},
		{"(503) 7365.7811", []string{"SV"}, []string{"50373657811"}},
		{"612 345 678", []string{"SV", "ES"}, []string{"503612345678", "34612345678", "612345678"}},
		// Both readings where the number could be national or carry the code.
		{"393 123 4567", []string{"IT"}, []string{"393931234567", "3931234567"}},
		{"12.50", []string{"SV"}, nil},
		{"jose", []string{"SV"}, nil},
	}
	for _, tt := range tests {
		if got := PhoneSearchKeys(tt.q, tt.countries); !slices.Equal(got, tt.want) {
			t.Errorf("PhoneSearchKeys(%q, %q) = %q, want %q", tt.q, tt.countries, got, tt.want)
		}
	}
	// Every key a number is stored under is among those its search tries.
	for _, c := range PhoneCountries() {
		for _, phone := range []string{"73657811", "612 345 678", "0612 345 678", "(212) 555-0100"} {
			key := PhoneKey(phone, c)
			if key == "" {
				continue
			}
			if keys := PhoneSearchKeys(phone, []string{c}); !slices.Contains(keys, key) {
				t.Errorf("%s %q: stored as %s, searched as %q", c, phone, key, keys)
			}
		}
	}
}
